package pgbench

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// TestScripts runs each benchmark script for a few transactions through a counter of the
// messages pgbench sends, on a migrated store with the job's fence raised: every script
// writes a row per transaction and sends as many messages per transaction as the comparison
// says it does (three, four, four, and one for the others), and the fenced scripts refuse a
// token older or newer than the fence and write nothing with it.
func TestScripts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testenv.MustDatabase(t)
	roleDSN := prepare(t, dsn)
	q := testenv.MustQueryCounter(t, roleDSN)
	const txs = 5
	for _, v := range variants {
		t.Run(strings.TrimSuffix(v.script, ".sql"), func(t *testing.T) {
			rows, queries := countRows(t, dsn), q.Count('Q')
			r, out, err := runPgbench(ctx, t, q.DSN(), v.script, token, 1, 0, txs)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if r.processed != txs || r.failed != 0 {
				t.Fatalf("processed %d, failed %d; want %d, 0\n%s", r.processed, r.failed, txs, out)
			}
			if got := countRows(t, dsn) - rows; got != txs {
				t.Fatalf("rows written = %d, want %d", got, txs)
			}
			if got, want := q.Count('Q')-queries, int64(txs*v.messages); got != want {
				t.Fatalf("messages sent = %d for %d transactions, want %d (%d each)", got, txs, want, v.messages)
			}
			if !v.fenced {
				return
			}
			for _, stale := range []int64{token - 1, token + 1} {
				rows := countRows(t, dsn)
				_, out, err := runPgbench(ctx, t, q.DSN(), v.script, stale, 1, 0, 1)
				if !errors.Is(err, errAborted) || !strings.Contains(out, "fenced out") {
					t.Fatalf("token %d against fence %d: err %v, want pgbench aborted by fence_verify\n%s", stale, token, err, out)
				}
				if got := countRows(t, dsn) - rows; got != 0 {
					t.Fatalf("token %d against fence %d wrote %d rows, want 0", stale, token, got)
				}
			}
		})
	}
}

// TestBenchmarksDoc: BENCHMARKS.md gives the command that runs this benchmark and names every
// script, and the Makefile's bench-pgbench target runs the same command.
func TestBenchmarksDoc(t *testing.T) {
	const command = `go test -run '^$' -bench Pgbench -benchtime 1x -timeout 30m ./bench/pgbench/`
	doc, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), command) {
		t.Errorf("BENCHMARKS.md does not give the command %s", command)
	}
	for _, v := range variants {
		if !strings.Contains(string(doc), "`"+v.script+"`") {
			t.Errorf("BENCHMARKS.md does not name the script %s", v.script)
		}
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(strings.Replace(command, "go test", "$(GO) test", 1), "$'", "$$'"); !strings.Contains(string(mk), "bench-pgbench:\n\t"+want) {
		t.Errorf("Makefile has no bench-pgbench target running %s", want)
	}
}

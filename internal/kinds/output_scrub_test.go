package kinds

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/runlog"
)

// scrubSecret is the daemon's secret of these tests, and scrubTest its scrub.
const scrubSecret = "adm1n-T0ken-0123456789abcdef"

var scrubTest = strings.NewReplacer(scrubSecret, "[redacted]").Replace

// redactorTest is scrubTest as the daemon's Redactor.
var redactorTest = runlog.Fixed{Func: scrubTest, MaxSecret: len(scrubSecret)}

// secretPart returns the longest start or end of scrubSecret, of 4 bytes or more, that text
// shows; "" if none.
func secretPart(text string) string {
	for n := len(scrubSecret); n >= 4; n-- {
		for _, part := range []string{scrubSecret[:n], scrubSecret[len(scrubSecret)-n:]} {
			if strings.Contains(text, part) {
				return part
			}
		}
	}
	return ""
}

// TestScrubbedCapture_SecretAcrossTheCut: a Capture that scrubs keeps what cutting the whole
// output scrubbed would keep, wherever the secret falls around the head's end and the tail's
// start and however the output is cut into writes, so no part of the secret is kept; String in
// the middle changes nothing.
func TestScrubbedCapture_SecretAcrossTheCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const limit = 100
	for at := limit/2 - len(scrubSecret); at <= limit/2; at++ {
		for _, tailStart := range []bool{false, true} {
			before := strings.Repeat("x", at)
			after := strings.Repeat("z", limit/2-len(scrubSecret)+1+rng.IntN(len(scrubSecret)-1))
			text := before + scrubSecret + strings.Repeat("y", 3*runlog.Overlap)
			if tailStart {
				text = strings.Repeat("y", 3*runlog.Overlap) + scrubSecret + after
			}
			c := NewScrubbedCapture(limit, redactorTest)
			for rest := text; rest != ""; {
				n := min(len(rest), 1+rng.IntN(2*len(scrubSecret)))
				_, _ = c.Write([]byte(rest[:n]))
				rest = rest[n:]
				_ = c.String()
			}
			got := c.String()
			if want := Excerpt(scrubTest(text), limit); got != want {
				t.Fatalf("secret at %d (tail start %v): kept %q, want %q", at, tailStart, got, want)
			}
			if part := secretPart(scrubTest(got)); part != "" {
				t.Fatalf("kept %q of the secret:\n%s", part, got)
			}
			if c.Len() != int64(len(text)) {
				t.Fatalf("Len() = %d, want the %d bytes written", c.Len(), len(text))
			}
		}
	}
}

// TestExecJob_ScrubsSecretsAcrossCuts: an exec job prints a secret where the stored output's head
// ends, then another where the live run log lets a long line through before its end, split
// into two writes a moment apart, then one where the stored output's tail starts. With the
// daemon's run log as its live output, nothing the runner stores (the output scrubbed once
// more) nor the run log shows any part of the secret, and neither loses a byte.
func TestExecJob_ScrubsSecretsAcrossCuts(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	// The first write ends 12 bytes into the second secret, past 4 KiB: the run log lets the
	// line through but for its last bytes.
	first := strings.Repeat("x", 1890) + scrubSecret + strings.Repeat("A", 2*runlog.Overlap-1890-len(scrubSecret)-6) + scrubSecret[:12]
	second := scrubSecret[12:] + "\n" + scrubSecret + strings.Repeat("z", DefaultOutputLimit/2-18)
	j := mustExec(t, ExecConfig{
		Command: []string{"/bin/sh", "-c", `printf %s "$FIRST"; sleep 0.3; printf %s "$SECOND"`},
		Env:     map[string]string{"FIRST": first, "SECOND": second},
	})
	live := runlog.New(nil, redactorTest)
	run := testRun()
	run.Live = live
	out, err := j.Execute(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	all := scrubTest(first + second)
	if stored := scrubTest(out); stored != Excerpt(all, 0) || secretPart(stored) != "" {
		t.Fatalf("stored output %q shows %q of the secret, want %q", stored, secretPart(stored), Excerpt(all, 0))
	}
	c, _ := live.Read(run.RunID, 0)
	if string(c.Data) != all || secretPart(string(c.Data)) != "" {
		t.Fatalf("run log shows %q of the secret (%d bytes kept, want %d)", secretPart(string(c.Data)), len(c.Data), len(all))
	}
}

// TestOutputScrub: a run's live output that scrubs lends its scrub; one that does not, none.
func TestOutputScrub(t *testing.T) {
	if outputScrub(scheduler.Attempt{Live: runlog.New(nil, redactorTest)}) == nil {
		t.Fatal("the run log's scrub was not found")
	}
	if outputScrub(scheduler.Attempt{Live: &liveRecorder{}}) != nil || outputScrub(scheduler.Attempt{}) != nil {
		t.Fatal("a scrub found where there is none")
	}
}

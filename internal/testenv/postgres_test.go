package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgres(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := MustPostgres(t, "fsync=off", "application_name=testenv check")

	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("addr = %q, want 127.0.0.1:port", p.Addr())
	}
	var setting string
	if err := Connect(ctx, t, p.DSN("postgres")).QueryRow(ctx, "SHOW fsync").Scan(&setting); err != nil {
		t.Fatalf("show fsync: %v", err)
	}
	if setting != "off" {
		t.Fatalf("fsync = %q, want off", setting)
	}

	dsn := p.CreateDatabase(t)
	other := p.CreateDatabase(t)
	if dsn == other {
		t.Fatalf("CreateDatabase returned %q twice", dsn)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, v text); INSERT INTO kv VALUES ('a', 'b')"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	_ = conn.Close(ctx)

	t.Run("RestartKeepsData", func(t *testing.T) {
		addr := p.Addr()
		p.Restart(t)
		if p.Addr() != addr {
			t.Fatalf("addr after restart = %s, want %s", p.Addr(), addr)
		}
		var v string
		if err := Connect(ctx, t, dsn).QueryRow(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v); err != nil {
			t.Fatalf("select after restart: %v", err)
		}
		if v != "b" {
			t.Fatalf("v = %q, want b", v)
		}
	})

	t.Run("StopRefusesConnections", func(t *testing.T) {
		conn := Connect(ctx, t, dsn)
		p.Stop(t)
		if err := conn.Ping(ctx); err == nil {
			t.Fatalf("ping on a stopped server succeeded")
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		if c, err := pgx.Connect(cctx, dsn); err == nil {
			_ = c.Close(ctx)
			t.Fatalf("connect to a stopped server succeeded")
		}
		p.Start(t)
		if err := Connect(ctx, t, dsn).Ping(ctx); err != nil {
			t.Fatalf("ping after start: %v", err)
		}
	})
}

func TestPostgres_CleanupRemovesEverything(t *testing.T) {
	t.Parallel()
	var p *Postgres
	t.Run("Inner", func(t *testing.T) {
		p = MustPostgres(t)
	})
	if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat %s after cleanup: %v, want not exist", p.dir, err)
	}
	if p.running() {
		t.Fatalf("server still running after cleanup")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, p.DSN("postgres")); err == nil {
		_ = c.Close(ctx)
		t.Fatalf("connect after cleanup succeeded")
	}
}

func TestPostgres_RejectsBadSetting(t *testing.T) {
	if _, err := startPostgres("fsync"); err == nil {
		t.Fatalf("setting without '=' accepted")
	}
}

func TestMustDatabase(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		dsns = make(map[string]bool)
	)
	for i := range 4 {
		t.Run("Parallel", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn := MustDatabase(t)
			mu.Lock()
			if dsns[dsn] {
				t.Errorf("dsn %s handed out twice", dsn)
			}
			dsns[dsn] = true
			mu.Unlock()
			conn := Connect(ctx, t, dsn)
			if _, err := conn.Exec(ctx, "CREATE TABLE t (i int)"); err != nil {
				t.Fatalf("create table in database %d: %v", i, err)
			}
			var db string
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
				t.Fatalf("current_database: %v", err)
			}
			if !strings.HasSuffix(dsn, "/"+db+"?sslmode=disable") {
				t.Fatalf("connected to %q via %s", db, dsn)
			}
		})
	}
}

func TestDBName(t *testing.T) {
	got := dbName("TestX/Sub-Test_"+strings.Repeat("y", 100), 7)
	if len(got) > 63 {
		t.Fatalf("len(%q) = %d, want <= 63", got, len(got))
	}
	if !strings.HasPrefix(got, "t_testx_sub_test_") || !strings.HasSuffix(got, "_7") {
		t.Fatalf("dbName = %q", got)
	}
	if filepath.Base(got) != got {
		t.Fatalf("dbName %q has a path separator", got)
	}
}

package fence

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"scheduler/internal/testenv"
)

// Unreachable is judged on the errors Open really returns: a server that is down or has no
// listener is waited for; a missing database, a missing SQLite file's directory and a schema
// that is behind are not.
func TestUnreachable(t *testing.T) {
	open := func(cfg Config) error {
		s, err := Open(testCtx(t), cfg, nil)
		if err == nil {
			s.Close()
		}
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	pg := testenv.MustPostgres(t, "fsync=off")
	dsn := pg.CreateDatabase(t)
	missing, _ := url.Parse(dsn)
	missing.Path = "/no_such_database"

	t.Run("NoListener", func(t *testing.T) {
		if err := open(Config{DSN: fmt.Sprintf("postgres://scheduler@%s/db?connect_timeout=5", closed)}); !Unreachable(err) {
			t.Errorf("Unreachable(%v) = false, want true", err)
		}
	})
	t.Run("MissingDatabase", func(t *testing.T) {
		if err := open(Config{DSN: missing.String()}); err == nil || Unreachable(err) {
			t.Errorf("Unreachable(%v) = true, want an error that is not", err)
		}
	})
	t.Run("SQLiteDirectoryMissing", func(t *testing.T) {
		err := open(Config{Path: filepath.Join(t.TempDir(), "none", "scheduler.db")})
		if err == nil || Unreachable(err) {
			t.Errorf("Unreachable(%v) = true, want an error that is not", err)
		}
	})
	t.Run("SchemaBehind", func(t *testing.T) {
		s, err := Open(testCtx(t), Config{DSN: dsn}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.CheckSchema(testCtx(t)); !errors.Is(err, ErrSchemaBehind) || Unreachable(err) {
			t.Errorf("CheckSchema = %v; want ErrSchemaBehind, not unreachable", err)
		}
	})
	t.Run("ServerStopped", func(t *testing.T) {
		pg.Stop(t)
		defer pg.Start(t)
		if err := open(Config{DSN: dsn}); !Unreachable(err) {
			t.Errorf("Unreachable(%v) = false, want true", err)
		}
	})
	t.Run("Codes", func(t *testing.T) {
		for code, want := range map[string]bool{"57P03": true, "57P01": true, "53300": true, "08006": true,
			"28P01": false, "3D000": false, "42501": false} {
			if got := Unreachable(fmt.Errorf("open: %w", &pgconn.PgError{Code: code})); got != want {
				t.Errorf("Unreachable(SQLSTATE %s) = %v, want %v", code, got, want)
			}
		}
		if Unreachable(nil) || Unreachable(context.Canceled) {
			t.Error("nil or a cancelled context taken for an unreachable server")
		}
	})
}

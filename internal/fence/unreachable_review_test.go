package fence

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"scheduler/internal/testenv"
)

// Found by review: a local server down behind its Unix socket is waited for; two hosts, one down
// and the other refusing TLS, and a pooler's 08P01 refusal are not.
func TestUnreachable_Review(t *testing.T) {
	open := func(dsn string) error {
		s, err := Open(testCtx(t), Config{DSN: dsn}, nil)
		if err == nil {
			s.Close()
		}
		return err
	}
	// A Postgres on this host, reached by its Unix socket, that is down: its socket file is gone
	// (removed at shutdown, or /run is a tmpfs after a power cut). Should be waited for.
	t.Run("UnixSocketServerDown", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		err := open(fmt.Sprintf("host=%s user=postgres dbname=postgres connect_timeout=5", dir))
		if !Unreachable(err) {
			t.Errorf("Unreachable(%v) = false, want true: the local server is down", err)
		}
	})
	// Two hosts, one down, the other refusing TLS (a permanent misconfiguration): waited forever.
	t.Run("MultiHostOneDownOtherRefusesTLS", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, closedPort, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		pg := testenv.MustPostgres(t, "fsync=off")
		_, pgPort, _ := net.SplitHostPort(pg.Addr())
		err = open(fmt.Sprintf("postgres://postgres@127.0.0.1:%s,127.0.0.1:%s/postgres?sslmode=require&connect_timeout=5", closedPort, pgPort))
		if err == nil || Unreachable(err) {
			t.Errorf("Unreachable(%v) = true, want false: the live host refuses TLS, waiting cannot mend it", err)
		}
	})
	// PgBouncer sends 08P01 for "No such database" / "no such user" (its default SQLSTATE).
	t.Run("PgBouncerNoSuchDatabase", func(t *testing.T) {
		err := fmt.Errorf("open: %w", &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "No such database: schedulr"})
		if Unreachable(err) {
			t.Errorf("Unreachable(%v) = true, want false", err)
		}
	})
}

package election

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestStartEmbedded_PrivateSocket: the embedded etcd, which has no authentication, serves its
// clients on a socket in the data directory (mode 0600), reached only by those who may enter
// it, and on no loopback port, where every local user and every exec job could write its keys.
// A data directory too long for a socket path falls back to a loopback port, with a warning.
func TestStartEmbedded_PrivateSocket(t *testing.T) {
	t.Run("Socket", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil { // made beforehand, open to others
			t.Fatal(err)
		}
		emb := mustStartEmbedded(t, dir, zap.NewNop())
		for _, l := range emb.etcd.Clients {
			if n := l.Addr().Network(); n != "unix" {
				t.Fatalf("the embedded etcd serves clients on %s %s, want only its socket", n, l.Addr())
			}
		}
		sock := filepath.Join(dir, embeddedSocket)
		if eps := emb.Endpoints(); len(eps) != 1 || eps[0] != "unix://"+sock {
			t.Fatalf("Endpoints = %v, want [unix://%s]", eps, sock)
		}
		fi, err := os.Stat(sock)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Fatalf("socket mode %04o, want 0600", perm)
		}
		mustServe(t, emb)
	})
	t.Run("PathTooLong", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), strings.Repeat("d", socketPathMax))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zap.WarnLevel)
		emb := mustStartEmbedded(t, dir, zap.New(core))
		if eps := emb.Endpoints(); len(eps) != 1 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
			t.Fatalf("Endpoints = %v, want a loopback port", eps)
		}
		if logs.FilterMessageSnippet("too long for a unix socket").Len() != 1 {
			t.Fatalf("no warning that the socket path is too long: %v", logs.All())
		}
		mustServe(t, emb)
	})
}

func mustStartEmbedded(t *testing.T, dir string, lg *zap.Logger) *Embedded {
	t.Helper()
	emb, err := StartEmbedded(testContext(t), dir, lg)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(emb.Close)
	return emb
}

// mustServe puts and reads a key through the endpoint EmbeddedEndpoints records.
func mustServe(t *testing.T, emb *Embedded) {
	t.Helper()
	eps, err := EmbeddedEndpoints(filepath.Dir(emb.file))
	if err != nil {
		t.Fatal(err)
	}
	cli, err := NewClient(ClientConfig{Endpoints: eps}, testLogger(t))
	if err != nil {
		t.Fatalf("NewClient(%v): %v", eps, err)
	}
	defer func() { _ = cli.Close() }()
	ctx := testContext(t)
	if _, err := cli.Put(ctx, "/test/socket", "x"); err != nil {
		t.Fatalf("put through %v: %v", eps, err)
	}
	if r, err := cli.Get(ctx, "/test/socket"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("get through %v: %v %v", eps, r, err)
	}
}

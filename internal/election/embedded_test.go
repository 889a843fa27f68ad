package election

import (
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestStartEmbedded(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	core, logs := observer.New(zap.WarnLevel)
	lg := zap.New(core)

	emb, err := StartEmbedded(ctx, dir, lg)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			emb.Close()
		}
	}()
	if n := logs.FilterMessage("embedded etcd: development only, not highly available").Len(); n != 1 {
		t.Fatalf("%d warnings that the embedded etcd is not highly available, want 1", n)
	}
	recorded, err := EmbeddedEndpoints(dir)
	if err != nil || !slices.Equal(recorded, emb.Endpoints()) {
		t.Fatalf("EmbeddedEndpoints = %v, %v; want %v", recorded, err, emb.Endpoints())
	}

	cli, err := NewClient(ClientConfig{Endpoints: emb.Endpoints()}, testLogger(t))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	w := newWorld(t, "/test/embedded")
	n := w.start(cli, "dev")
	first := w.waitLeader(ctx, 0)
	n.stop(t)
	_ = cli.Close()
	emb.Close()
	closed = true
	if _, err := EmbeddedEndpoints(dir); err == nil {
		t.Fatalf("EmbeddedEndpoints after Close: nil error, want the record gone")
	}

	// A restart on the same data directory is the same one-member cluster
	// with its history: the next term's token continues from there.
	emb, err = StartEmbedded(ctx, dir, lg)
	if err != nil {
		t.Fatalf("StartEmbedded again: %v", err)
	}
	closed = false
	cli, err = NewClient(ClientConfig{Endpoints: emb.Endpoints()}, testLogger(t))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer cli.Close()
	w2 := newWorld(t, "/test/embedded")
	n = w2.start(cli, "dev")
	second := w2.waitLeader(ctx, first.term.Token)
	n.stop(t)
	t.Logf("token %d before the restart, %d after", first.term.Token, second.term.Token)
}

package control

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestStore_Pause(t *testing.T) {
	t.Parallel()
	ctx, s := etcdStore(t, "/pause/election")
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	s.now = func() time.Time { return t0 }

	t.Run("RoundTrip", func(t *testing.T) {
		if paused, err := s.Pause(ctx, "invoices", "alice"); err != nil || !paused {
			t.Fatalf("pause = %v, %v; want true, nil", paused, err)
		}
		s.now = func() time.Time { return t0.Add(time.Hour) }
		if paused, err := s.Pause(ctx, "invoices", "bob"); err != nil || paused {
			t.Fatalf("pause again = %v, %v; want false, nil", paused, err)
		}
		if _, err := s.Pause(ctx, "stock", "node-2"); err != nil {
			t.Fatalf("pause stock: %v", err)
		}
		m, err := s.Paused(ctx)
		if err != nil {
			t.Fatalf("paused: %v", err)
		}
		want := map[string]PauseInfo{
			"invoices": {By: "alice", At: t0}, // the first pause is kept
			"stock":    {By: "node-2", At: t0.Add(time.Hour)},
		}
		if len(m) != len(want) {
			t.Fatalf("paused = %v, want %v", m, want)
		}
		for job, w := range want {
			if got := m[job]; got.By != w.By || !got.At.Equal(w.At) {
				t.Errorf("paused[%s] = %+v, want %+v", job, got, w)
			}
		}

		if resumed, err := s.Resume(ctx, "invoices"); err != nil || !resumed {
			t.Fatalf("resume = %v, %v; want true, nil", resumed, err)
		}
		if resumed, err := s.Resume(ctx, "invoices"); err != nil || resumed {
			t.Fatalf("resume again = %v, %v; want false, nil", resumed, err)
		}
		if resumed, err := s.Resume(ctx, "never-paused"); err != nil || resumed {
			t.Fatalf("resume of a job never paused = %v, %v; want false, nil", resumed, err)
		}
		m, err = s.Paused(ctx)
		if err != nil {
			t.Fatalf("paused: %v", err)
		}
		if _, ok := m["invoices"]; ok || len(m) != 1 {
			t.Fatalf("paused after resume = %v, want only stock", m)
		}
	})

	t.Run("KeyAloneMeansPaused", func(t *testing.T) {
		if _, err := s.cli.Put(ctx, s.k.paused("by-hand"), ""); err != nil {
			t.Fatalf("put: %v", err)
		}
		m, err := s.Paused(ctx)
		if err != nil {
			t.Fatalf("paused: %v", err)
		}
		if info, ok := m["by-hand"]; !ok || info != (PauseInfo{}) {
			t.Fatalf("paused[by-hand] = %+v, %v; want an empty record, true", info, ok)
		}
	})

	t.Run("RejectsBadJobNames", func(t *testing.T) {
		for _, job := range []string{"", "a/b", "A"} {
			if _, err := s.Pause(ctx, job, "x"); !errors.Is(err, ErrInvalidJob) {
				t.Errorf("pause %q = %v, want ErrInvalidJob", job, err)
			}
			if _, err := s.Resume(ctx, job); !errors.Is(err, ErrInvalidJob) {
				t.Errorf("resume %q = %v, want ErrInvalidJob", job, err)
			}
		}
	})
}

// TestDecodePause_ClipsBy: a pause key written by hand with a huge or control-laden "by" is
// read with that field clipped to what a replica's own fields may hold, its control characters
// dropped: the console and status show it on every refresh.
func TestDecodePause_ClipsBy(t *testing.T) {
	s := &Store{}
	for _, tc := range []struct {
		name, by string
		want     func(string) bool
	}{
		{"Short", "alice", func(by string) bool { return by == "alice" }},
		{"Control", "al\x1b[31mice\x00", func(by string) bool { return by == "al[31mice" }},
		{"Huge", strings.Repeat("é", 1<<20), func(by string) bool {
			return len(by) <= maxReplicaField+len("…") && utf8.ValidString(by) && strings.HasSuffix(by, "…")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, err := json.Marshal(PauseInfo{By: tc.by})
			if err != nil {
				t.Fatal(err)
			}
			if _, info := s.decodePause([]byte("x"), value); !tc.want(info.By) {
				t.Fatalf("by = %.80q (%d bytes)", info.By, len(info.By))
			}
		})
	}
}

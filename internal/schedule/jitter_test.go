package schedule

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"
	"time"
)

// TestJitter_Golden pins the delays: replicas of different versions must agree, so a change here is
// a breaking change, not a test to update.
func TestJitter_Golden(t *testing.T) {
	slot := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		job    string
		slot   time.Time
		window time.Duration
		want   string
	}{
		{"invoices", slot, time.Minute, "23.659678149s"},
		{"stock", slot, time.Minute, "57.536559376s"},
		{"invoices", slot.Add(24 * time.Hour), time.Minute, "31.897165227s"},
		{"invoices", slot, time.Hour, "38m23.659678149s"},
		{"", time.Unix(-1, 5), 10 * time.Second, "5.189277724s"},
	}
	for _, tt := range tests {
		if got := Jitter(tt.job, tt.slot, tt.window); got.String() != tt.want {
			t.Errorf("Jitter(%q, %s, %s)=%s, want %s", tt.job, tt.slot, tt.window, got, tt.want)
		}
	}
}

// TestJitter_MatchesDefinition checks Jitter against its documented definition, written with the
// standard library's FNV and byte encoding.
func TestJitter_MatchesDefinition(t *testing.T) {
	def := func(job string, slot time.Time, window time.Duration) time.Duration {
		h := fnv.New64a()
		h.Write([]byte(job))
		h.Write([]byte{0})
		var b [12]byte
		binary.BigEndian.PutUint64(b[:8], uint64(slot.Unix()))
		binary.BigEndian.PutUint32(b[8:], uint32(slot.Nanosecond()))
		h.Write(b[:])
		x := h.Sum64()
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		x ^= x >> 31
		return time.Duration(x % uint64(window))
	}
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2000 {
		job := fmt.Sprintf("job-%d", i%37)
		slot := base.Add(time.Duration(i) * 7919 * time.Millisecond).Add(-time.Duration(i%3) * 100 * 365 * 24 * time.Hour)
		window := time.Duration(1+i%500) * time.Second / 3
		if got, want := Jitter(job, slot, window), def(job, slot, window); got != want {
			t.Fatalf("Jitter(%q, %s, %s)=%s, definition gives %s", job, slot, window, got, want)
		}
	}
}

func TestJitter_Range(t *testing.T) {
	slot := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)
	for _, w := range []time.Duration{0, -time.Second} {
		if got := Jitter("invoices", slot, w); got != 0 {
			t.Errorf("window %s: jitter=%s, want 0", w, got)
		}
	}
	if got := Jitter("invoices", slot, 1); got != 0 {
		t.Errorf("window 1ns: jitter=%s, want 0", got)
	}
	for i := range 10000 {
		w := time.Duration(1+i) * time.Millisecond
		if got := Jitter(fmt.Sprint("job", i), slot, w); got < 0 || got >= w {
			t.Fatalf("window %s: jitter=%s, want in [0, %s)", w, got, w)
		}
	}
}

// TestJitter_SameInstantAnyZone checks that replicas agree whatever zone they hold the slot in.
func TestJitter_SameInstantAnyZone(t *testing.T) {
	slot := time.Date(2025, 3, 30, 1, 0, 0, 0, time.UTC)
	want := Jitter("invoices", slot, time.Minute)
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		if got := Jitter("invoices", slot.In(mustZone(t, zone)), time.Minute); got != want {
			t.Errorf("slot in %s: jitter=%s, want %s", zone, got, want)
		}
	}
}

// TestJitter_SpreadsTheHerd checks that 100k jobs sharing a slot spread evenly over the window, and
// that one job's delay varies from slot to slot.
func TestJitter_SpreadsTheHerd(t *testing.T) {
	const jobs, buckets = 100_000, 60
	slot := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)
	var count [buckets]int
	for i := range jobs {
		count[Jitter(fmt.Sprintf("job-%06d", i), slot, time.Minute)/time.Second]++
	}
	for b, n := range count {
		// The mean is 1667 and the standard deviation about 40; allow 6 of them.
		if n < jobs/buckets-240 || n > jobs/buckets+240 {
			t.Fatalf("second %d of the window holds %d jobs, want about %d (counts %v)", b, n, jobs/buckets, count)
		}
	}
	seen := map[time.Duration]bool{}
	for d := range 100 {
		seen[Jitter("invoices", slot.AddDate(0, 0, d), time.Minute)/time.Second] = true
	}
	if len(seen) < 40 {
		t.Fatalf("100 daily slots of one job fall in %d distinct seconds, want at least 40", len(seen))
	}
}

func BenchmarkJitter(b *testing.B) {
	slot := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		Jitter("invoices-eu-west", slot, time.Minute)
	}
}

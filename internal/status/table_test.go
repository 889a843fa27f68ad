package status

import (
	"encoding/json"
	"testing"
	"time"
)

func TestServer_Table(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	next := now.Add(time.Hour)
	d := fakeDaemon{table: []Entry{
		{Name: "a", Schedule: "0 * * * *", Timezone: "UTC", Enabled: true, Digest: "d1", Next: func(time.Time) time.Time { return next }},
		{Name: "off", Schedule: "0 * * * *", Timezone: "Europe/Berlin", Enabled: false, Digest: "d2", Next: func(time.Time) time.Time { return next }},
		{Name: "never", Schedule: "0 0 30 2 *", Timezone: "UTC", Enabled: true, Next: func(time.Time) time.Time { return time.Time{} }},
	}}
	src := &fakeSource{}
	s := newTestServer(t, src, d)
	s.cfg.Now = func() time.Time { return now }
	code, body := get(s, "/table")
	if code != 200 {
		t.Fatalf("GET /table: %d %s", code, body)
	}
	var doc TableDoc
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("GET /table: %v in %s", err, body)
	}
	if len(doc.Jobs) != 3 {
		t.Fatalf("jobs=%+v, want 3", doc.Jobs)
	}
	if j := doc.Jobs[0]; j.Name != "a" || j.Digest != "d1" || j.Next == nil || !j.Next.Equal(next) {
		t.Errorf("jobs[0]=%+v, want a with digest d1 next %s", j, next)
	}
	if j := doc.Jobs[1]; j.Enabled || j.Next != nil || j.Timezone != "Europe/Berlin" {
		t.Errorf("jobs[1]=%+v, want disabled, no next", j)
	}
	if j := doc.Jobs[2]; j.Next != nil {
		t.Errorf("jobs[2]=%+v, want no next for a schedule without slots", j)
	}
	if src.reads != 0 {
		t.Errorf("the table read the election %d times; it serves from memory", src.reads)
	}
}

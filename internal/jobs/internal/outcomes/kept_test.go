package outcomes

import (
	"fmt"
	"testing"
	"time"

	"scheduler"
)

// TestKept_Take: an orphan whose outcome is kept is finished with it, once; the others, and an
// orphan of another job under the same run id, are taken over.
func TestKept_Take(t *testing.T) {
	slot := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		kept        []scheduler.Completion
		orphans     []scheduler.Run
		wantRest    []int64
		wantWritten []int64
	}{
		{"NoneKept", nil, []scheduler.Run{{RunID: 1, Job: "a", ScheduledAt: slot}}, []int64{1}, nil},
		{"Kept", []scheduler.Completion{{RunID: 1, Job: "a"}}, []scheduler.Run{{RunID: 1, Job: "a", ScheduledAt: slot}, {RunID: 2, Job: "a"}}, []int64{2}, []int64{1}},
		{"OtherJob", []scheduler.Completion{{RunID: 1, Job: "a"}}, []scheduler.Run{{RunID: 1, Job: "b", ScheduledAt: slot}}, []int64{1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k Kept
			for _, c := range tc.kept {
				k.Keep(c, time.Second)
			}
			rest, written := k.Take(tc.orphans)
			for _, u := range written {
				if u.Took != time.Second || !u.Slot.Equal(slot) {
					t.Fatalf("taken %+v, want it as kept, with its run's slot %s", u, slot)
				}
			}
			if ids(rest) != fmtIDs(tc.wantRest) || idsOf(written) != fmtIDs(tc.wantWritten) {
				t.Fatalf("rest %s written %s, want %s and %s", ids(rest), idsOf(written), fmtIDs(tc.wantRest), fmtIDs(tc.wantWritten))
			}
			if again, w := k.Take(tc.orphans); len(w) != 0 || len(again) != len(tc.orphans) {
				t.Fatalf("a second Take wrote %d, want the outcomes taken once", len(w))
			}
		})
	}
}

// TestKept_Bounded: past MaxKept, keeping one more drops one kept before.
func TestKept_Bounded(t *testing.T) {
	var k Kept
	for i := range MaxKept + 1 {
		k.Keep(scheduler.Completion{RunID: int64(i), Job: "a"}, 0)
	}
	if n := k.Len(); n != MaxKept {
		t.Fatalf("kept %d, want %d", n, MaxKept)
	}
}

func ids(runs []scheduler.Run) string {
	out := make([]int64, len(runs))
	for i, r := range runs {
		out[i] = r.RunID
	}
	return fmtIDs(out)
}

func idsOf(us []Unwritten) string {
	out := make([]int64, len(us))
	for i, u := range us {
		out[i] = u.C.RunID
	}
	return fmtIDs(out)
}

func fmtIDs(ids []int64) string { return fmt.Sprint(ids) }

package jobs

import (
	"testing"

	"scheduler/internal/jobs/internal/catchup"
	"scheduler/internal/jobs/internal/overlap"
)

// TestSpec_PoliciesMatch: a Spec's policies are the values the packages that apply them read.
func TestSpec_PoliciesMatch(t *testing.T) {
	for a, b := range map[Overlap]overlap.Policy{OverlapSkip: overlap.Skip, OverlapQueue: overlap.Queue, OverlapReplace: overlap.Replace, OverlapAllow: overlap.Allow} {
		if overlap.Policy(a) != b {
			t.Errorf("overlap %q is %q to package overlap", a, b)
		}
	}
	for a, b := range map[Misfire]catchup.Misfire{MisfireSkip: catchup.MisfireSkip, MisfireOnce: catchup.MisfireOnce, MisfireAll: catchup.MisfireAll} {
		if catchup.Misfire(a) != b {
			t.Errorf("misfire %q is %q to package catchup", a, b)
		}
	}
}

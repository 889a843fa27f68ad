package runopts

import (
	"context"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// ledger is a Ledger that is never called: Fill only checks that there is one.
type ledger struct{ scheduler.Ledger }

// TestFill: options without a ledger or a node name are refused, saying which; the unset
// settings get their defaults, and the set ones are kept.
func TestFill(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Node: "n1"}, "no ledger"},
		{Options{Ledger: ledger{}}, "no node name"},
	} {
		if err := tc.opts.Fill(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fill(%+v)=%v, want %q", tc.opts, err, tc.want)
		}
	}
	o := Options{Ledger: ledger{}, Node: "n1", WriteTimeout: time.Second, ClaimAhead: -1}
	if err := o.Fill(); err != nil {
		t.Fatal(err)
	}
	if o.Clock == nil || o.Logger == nil || o.MaxBackoff != 5*time.Minute || o.WriteTimeout != time.Second || o.ClaimAhead != -1 {
		t.Fatalf("filled %+v, want a clock, a logger, 5m backoff cap, and the write timeout and claim-ahead set", o)
	}
	o = Options{Ledger: ledger{}, Node: "n1", Confirm: func(context.Context, int64) error { return nil }}
	if err := o.Fill(); err != nil || o.ClaimAhead != DefaultClaimAhead || o.WriteTimeout != 30*time.Second {
		t.Fatalf("Fill=%v, claim ahead %s, write timeout %s; want the defaults", err, o.ClaimAhead, o.WriteTimeout)
	}
}

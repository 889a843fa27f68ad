package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// hookJob is the nemesis's http job: it POSTs each slot to the suite's receiver, which a fault
// makes refuse the token (409 Conflict) for a while.
const hookJob = "hook"

// refusedReason is the reason of a run whose receiver refused its token.
const refusedReason = "receiver refused the token"

// Modes of the receiver: it accepts every request, refuses every one, or refuses every other.
const (
	receiverAccepts = iota
	receiverRefusesAll
	receiverRefusesSome
)

// hookRequest is one request the receiver answered: its own log, which the checker compares
// with the ledger.
type hookRequest struct {
	At     time.Time
	Key    string // Idempotency-Key: the run's id, the same for every attempt and term of a slot
	Token  int64
	Slot   time.Time
	Status int
}

// receiver is the webhook receiver of the nemesis's http job: a real HTTP server that answers
// 200 or, while a fault says so, 409 Conflict to all or every other request, and logs each.
type receiver struct {
	srv *httptest.Server

	mu   sync.Mutex
	mode int
	seq  int // requests since the mode was set: in receiverRefusesSome the odd ones are refused
	log  []hookRequest
}

// mustReceiver starts the receiver, closed in t.Cleanup.
func mustReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	req := hookRequest{At: time.Now(), Key: r.Header.Get("Idempotency-Key"), Status: http.StatusOK}
	req.Token, _ = strconv.ParseInt(r.Header.Get("Fencing-Token"), 10, 64)
	if slot, err := time.Parse(time.RFC3339, r.Header.Get("X-Scheduler-Scheduled-At")); err == nil {
		req.Slot = slot.UTC()
	}
	rc.mu.Lock()
	rc.seq++
	if rc.mode == receiverRefusesAll || (rc.mode == receiverRefusesSome && rc.seq%2 == 1) {
		req.Status = http.StatusConflict
	}
	rc.log = append(rc.log, req)
	rc.mu.Unlock()
	if req.Status == http.StatusConflict {
		http.Error(w, "a newer token was seen", http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// setMode sets how the receiver answers from now on. Every other request is counted from here,
// the first refused, so that a refusal shorter than two of the job's slots still refuses one
// whatever came before.
func (rc *receiver) setMode(mode int) {
	rc.mu.Lock()
	rc.mode, rc.seq = mode, 0
	rc.mu.Unlock()
}

// requests returns the receiver's log so far.
func (rc *receiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookRequest(nil), rc.log...)
}

// hookJobYAML is the http job of the workload, its retries there so that a refused run's not
// being retried shows.
func hookJobYAML(url string) string {
	return fmt.Sprintf(`  - name: %s
    schedule: "@every %s"
    type: http
    url: %s/hook
    timeout: 10s
    retries: 2
    retry_backoff: 1s
`, hookJob, nemesisEvery, url)
}

// planReceiverRefuses makes the receiver answer 409 to every request (variant even) or to every
// other one (odd) for up to a few TTLs. The leader at the start is kept, so that the checker can
// tell whether a refusal ended its term.
func (n *nemesis) planReceiverRefuses(dr draw) *fault {
	hold := dr.span(time.Second, 3*ttl)
	how, mode := "every request", receiverRefusesAll
	if dr.variant%2 == 1 {
		how, mode = "every other request", receiverRefusesSome
	}
	rec := len(n.faults)
	return &fault{
		what:  fmt.Sprintf("the receiver of %s answers 409 to %s for %d ms", hookJob, how, ms(hold)),
		holds: []string{"receiver"},
		inject: func() {
			n.rc.setMode(mode)
			if l, ok := n.leader(); ok {
				n.refusalLeader[rec] = l.token
			}
		},
		steps: []faultStep{{after: hold, do: func() time.Duration {
			n.rc.setMode(receiverAccepts)
			n.mark("the receiver of %s accepts again", hookJob)
			return 0
		}}},
	}
}

// refusalWindows returns the stretches in which the receiver refused, each quiet when no other
// fault was in force from quietMargin before it to quietMargin after it and a leader led as it
// began: only then does the checker ask that no term ended and the other jobs ran untouched.
func (n *nemesis) refusalWindows() []refusal {
	var out []refusal
	for i, f := range n.faults {
		if f.kind != "receiver-refuses" {
			continue
		}
		to := f.to
		if to.IsZero() {
			to = n.stopped
		}
		r := refusal{from: f.from, to: to, leader: n.refusalLeader[i]}
		r.quiet = r.leader != 0 && !n.otherFault(i, f.from.Add(-quietMargin), to.Add(quietMargin))
		out = append(out, r)
	}
	return out
}

// quietMargin is how far from a refusal another fault must be for the refusal to be judged
// alone: a slot's period, longer than any run of the workload.
const quietMargin = nemesisEvery

// refusal is a stretch in which the receiver refused; leader is the token that led as it began.
type refusal struct {
	from, to time.Time
	leader   int64
	quiet    bool
}

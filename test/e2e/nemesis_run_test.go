package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// nemesisMaxActive is how many faults may be in force at once.
const nemesisMaxActive = 3

// nemesisCheckEvery is how often the checker reads the data while the faults go on.
const nemesisCheckEvery = 15 * time.Second

// draw is one tick of the nemesis: every value it may need, drawn whether it is used or not,
// so that a seed replays the same sequence of choices whatever the system did meanwhile.
type draw struct {
	kind    float64 // which fault, by weight
	target  float64 // which replica or member: below leaderBias the leader
	length  float64 // how long, within the kind's range
	variant int     // the kind's variant (pause or cut, kill or stop, ...)
	gap     float64 // the wait before the next tick
}

// leaderBias is how often a fault aimed at a replica goes to the leader.
const leaderBias = 0.6

func nextDraw(rng *rand.Rand) draw {
	return draw{kind: rng.Float64(), target: rng.Float64(), length: rng.Float64(), variant: rng.IntN(6), gap: rng.Float64()}
}

// span is d between lo and hi.
func (d draw) span(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(d.length*float64(hi-lo))
}

// nemesisRand returns the random source of one backend's nemesis under seed.
func nemesisRand(seed uint64, backend string) *rand.Rand {
	h := uint64(0)
	for _, c := range "nemesis/" + backend {
		h = h*31 + uint64(c)
	}
	return rand.New(rand.NewPCG(seed, h))
}

// step is a later part of a fault: a heal, a restart. A step that returns a positive duration
// is tried again that much later (a restart waiting for its process to exit).
type step struct {
	at   time.Time
	seq  int // order of steps due at the same time
	what string
	do   func() time.Duration
}

// faultRecord is one fault injected, for the timeline, the rates and the causes of outages.
type faultRecord struct {
	kind     string
	what     string
	from, to time.Time
}

// interval is a stretch of time: a replica's outage (dead: not running, which ends its term;
// else frozen, which a short term survives), a term.
type interval struct {
	from, to time.Time
	dead     bool
}

// nemesis injects faults into one deployment and keeps what it did.
type nemesis struct {
	t       *testing.T
	d       *deployment
	backend string
	seed    uint64
	rng     *rand.Rand
	marks   string
	tl      *timeline
	kinds   []faultKind

	busy    map[string]bool
	pending []step
	seq     int
	active  int

	started, stopped time.Time
	leaderAt         time.Time // a leader led again after the faults stopped
	faults           []faultRecord
	skipped          int
	down             map[string][]interval // replica -> frozen or not running
	downSince        map[string]interval
	member           map[int]string // etcd member -> "stopped" or "killed" while a fault holds it
	logs             map[string]*logTail
	startedAt        map[string]time.Time // each replica's last start
	exitSeen         map[string]time.Time // replicas seen exited on their own, not restarted yet
	startupExits     int
	seen             map[string]bool
	violations       []string

	rc            *receiver     // the http job's receiver
	refusalLeader map[int]int64 // receiver-refuses fault -> the token leading as it began
	role          string        // DSN of the job's database role, straight to Postgres
	holds         []fenceHold   // the job role's fence holds
	poisonRefused int           // the job role's attempts refused

	script []scripted // when set, the faults injected instead of the seed's draws
}

// scripted is a fault injected at a set time after the nemesis starts rather than drawn.
type scripted struct {
	after time.Duration
	kind  string
	dr    draw
}

// kind returns the fault kind named name.
func (n *nemesis) kind(name string) faultKind {
	for _, k := range n.kinds {
		if k.name == name {
			return k
		}
	}
	n.t.Fatalf("no fault kind %q", name)
	return faultKind{}
}

// started is when d's replicas were started, before any of them could win a term.
func newNemesis(t *testing.T, d *deployment, backend string, seed uint64, marks string, started time.Time) *nemesis {
	n := &nemesis{
		t: t, d: d, backend: backend, seed: seed, rng: nemesisRand(seed, backend), marks: marks,
		tl:   newTimeline(t, fmt.Sprintf("Nemesis %s (seed %d)", backend, seed)),
		busy: map[string]bool{}, down: map[string][]interval{}, downSince: map[string]interval{},
		member: map[int]string{}, seen: map[string]bool{}, refusalLeader: map[int]int64{},
		startedAt: map[string]time.Time{}, exitSeen: map[string]time.Time{}, logs: map[string]*logTail{},
	}
	for _, node := range nodes {
		n.startedAt[node] = started
	}
	n.kinds = n.faultKinds()
	return n
}

// run injects faults for dur: a tick every 0.5 to 3 s draws a fault, which is injected unless
// nemesisMaxActive are in force or what it needs is held by another; its later steps run when
// due. The data is checked every nemesisCheckEvery. Once dur has passed, every fault still in
// force is healed at once.
func (n *nemesis) run(dur time.Duration) {
	n.started = time.Now()
	n.tl.start(n.started, fmt.Sprintf("nemesis starts for %s against %s, up to %d faults at once", dur, n.backend, nemesisMaxActive))
	end := n.started.Add(dur)
	nextTick, nextCheck := n.started, n.started.Add(nemesisCheckEvery)
	total := 0
	for _, k := range n.kinds {
		total += k.weight
	}
	script := slices.Clone(n.script)
	slices.SortStableFunc(script, func(a, b scripted) int { return cmp.Compare(a.after, b.after) })
	for time.Now().Before(end) {
		now := time.Now()
		switch {
		case n.script != nil:
			for len(script) > 0 && !now.Before(n.started.Add(script[0].after)) {
				n.try(n.kind(script[0].kind), script[0].dr)
				script = script[1:]
			}
			nextTick = end
			if len(script) > 0 {
				nextTick = n.started.Add(script[0].after)
			}
		case !now.Before(nextTick):
			dr := nextDraw(n.rng)
			n.tick(dr, total)
			nextTick = now.Add(500*time.Millisecond + time.Duration(dr.gap*float64(2500*time.Millisecond)))
		}
		n.runDue(time.Now())
		n.restartExited()
		if !time.Now().Before(nextCheck) {
			n.checkNow()
			nextCheck = time.Now().Add(nemesisCheckEvery)
		}
		wake := minTime(minTime(nextTick, nextCheck), minTime(end, time.Now().Add(time.Second)))
		if len(n.pending) > 0 && n.pending[0].at.Before(wake) {
			wake = n.pending[0].at
		}
		sleepUntil(wake)
	}
	// Heal: every remaining step now, in order; a step still waiting is retried until done.
	for len(n.pending) > 0 {
		st := n.pending[0]
		n.pending = n.pending[1:]
		for {
			again := st.do()
			if again <= 0 {
				break
			}
			time.Sleep(again)
		}
	}
	n.stopped = time.Now()
	n.tl.mark(n.stopped, "faults stop: %d injected, %d draws skipped (their target busy or %d faults in force)", len(n.faults), n.skipped, nemesisMaxActive)
}

// tick draws a fault of the kinds by weight and injects it if it can.
func (n *nemesis) tick(dr draw, total int) {
	pick := int(dr.kind * float64(total))
	var k faultKind
	for _, k = range n.kinds {
		if pick < k.weight {
			break
		}
		pick -= k.weight
	}
	if k.name == "calm" {
		return
	}
	n.try(k, dr)
}

// try injects a fault of kind k for dr unless nemesisMaxActive are in force or what it needs is
// held by another.
func (n *nemesis) try(k faultKind, dr draw) {
	if n.active >= nemesisMaxActive {
		n.skipped++
		return
	}
	f := k.plan(n, dr)
	if f == nil {
		n.skipped++
		return
	}
	for _, r := range f.holds {
		if n.busy[r] {
			n.skipped++
			return
		}
	}
	for _, r := range f.holds {
		n.busy[r] = true
	}
	n.active++
	now := time.Now()
	rec := len(n.faults)
	n.faults = append(n.faults, faultRecord{kind: k.name, what: f.what, from: now})
	n.tl.mark(now, "fault %d %s: %s", rec+1, k.name, f.what)
	if f.inject != nil {
		f.inject()
	}
	release := func() {
		for _, r := range f.holds {
			delete(n.busy, r)
		}
		n.active--
		n.faults[rec].to = time.Now()
	}
	if len(f.steps) == 0 {
		release()
		return
	}
	left := len(f.steps)
	for _, st := range f.steps {
		do := st.do
		n.push(step{at: now.Add(st.after), what: st.what, do: func() time.Duration {
			if again := do(); again > 0 {
				return again
			}
			if left--; left == 0 {
				release()
			}
			return 0
		}})
	}
}

// push queues a step, in time order, after the steps due at the same time.
func (n *nemesis) push(st step) {
	n.seq++
	st.seq = n.seq
	n.pending = append(n.pending, st)
	sort.SliceStable(n.pending, func(i, j int) bool {
		if !n.pending[i].at.Equal(n.pending[j].at) {
			return n.pending[i].at.Before(n.pending[j].at)
		}
		return n.pending[i].seq < n.pending[j].seq
	})
}

// runDue runs the steps due at now.
func (n *nemesis) runDue(now time.Time) {
	for len(n.pending) > 0 && !n.pending[0].at.After(now) {
		st := n.pending[0]
		n.pending = n.pending[1:]
		if again := st.do(); again > 0 {
			st.at = time.Now().Add(again)
			n.push(st)
		}
	}
}

// mark records an event of a fault on the timeline.
func (n *nemesis) mark(format string, args ...any) { n.tl.mark(time.Now(), format, args...) }

// replicaDown and replicaUp record the stretches in which a replica was frozen or not running:
// a term does not lead while its replica is down.
func (n *nemesis) replicaDown(node string, dead bool) {
	n.downSince[node] = interval{from: time.Now(), dead: dead}
}

func (n *nemesis) replicaUp(node string) {
	if iv, ok := n.downSince[node]; ok {
		iv.to = time.Now()
		n.down[node] = append(n.down[node], iv)
		delete(n.downSince, node)
	}
}

// target returns the replica a fault aims at: the leader below leaderBias, else one by dr.
func (n *nemesis) target(dr draw) string {
	if dr.target < leaderBias {
		if l, ok := n.leader(); ok {
			return l.node
		}
	}
	return nodes[int(dr.target*float64(len(nodes)))%len(nodes)]
}

// violation reports v once, with when it was first seen.
func (n *nemesis) violation(v string) {
	if n.seen[v] {
		return
	}
	n.seen[v] = true
	n.violations = append(n.violations, v)
	n.t.Errorf("nemesis %s, seed %d, at %s: %s", n.backend, n.seed, stamp(time.Now()), v)
}

// read gathers the checker's data besides snap; at, when set, cuts it to what committed before.
func (n *nemesis) read(snap snapshot, at time.Time, emails []testenv.SMTPMessage) (nemesisData, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := n.d.readRows(ctx)
	if err != nil {
		return nemesisData{}, err
	}
	marks, err := readMarks(n.marks)
	if err != nil {
		return nemesisData{}, err
	}
	data := nemesisData{snap: snap, marks: marks, rows: rows, emails: emails, untrusted: n.untrusted(at.IsZero())}
	if !at.IsZero() {
		data = data.upTo(at)
	}
	return data, nil
}

// untrusted gathers what the checker needs of the untrusted parties' faults, the logs read
// after the store's data so that every term whose raise the data shows has logged its win;
// final adds what only the final check judges.
func (n *nemesis) untrusted(final bool) untrustedData {
	u := untrustedData{requests: n.rc.requests(), granted: map[int64]bool{}}
	for _, tm := range n.terms() {
		u.granted[tm.token] = true
	}
	for _, node := range nodes {
		for _, e := range n.logs[node].entries {
			if e.Msg == "leadership ended" || e.Msg == "campaign won" {
				e.Node = node
				u.ends = append(u.ends, e)
			}
		}
	}
	if final {
		u.refusals, u.holds, u.starts = n.refusalWindows(), n.holdsJudged(), map[string][]runStart{}
		for _, f := range n.faults {
			if f.kind != "receiver-refuses" {
				to := f.to
				if to.IsZero() {
					to = n.stopped
				}
				u.others = append(u.others, interval{from: f.from, to: to})
			}
		}
		for _, job := range nemesisJobNames {
			u.starts[job] = n.runStarts(job)
		}
	}
	return u
}

// checkNow checks the data committed so far, unless the store cannot be read now (restarting).
func (n *nemesis) checkNow() {
	at := time.Now()
	snap, err := n.d.trySnapshot()
	if err != nil {
		n.mark("check skipped: %v", err)
		return
	}
	data, err := n.read(snap, at, nil)
	if err != nil {
		n.mark("check skipped: %v", err)
		return
	}
	for _, v := range checkNemesis(data, false).violations {
		n.violation(v)
	}
}

package e2e

import (
	"net/http"
	"testing"
	"time"
)

// scriptPhase is how long after a slot a scripted nemesis starts, so that the script's times
// fall at known places between slots.
const scriptPhase = 200 * time.Millisecond

// untrustedScript is every variant of the untrusted parties' faults once, apart enough that
// each is judged alone, timed from the start, just after a slot:
//
//   - first the job role holds the http job's fence past two raise timeouts and the leader is
//     killed: the next term wins a TTL later and narrows its raise, a slot falls due in the rest
//     of the hold, and the term leads on unharmed past the hold's catch-up;
//   - then, a slot's period away from any other fault, the receiver refuses every request, and
//     later every other one;
//   - then each of poisonAttempts;
//   - then the job role holds the marker job's fence while the leader runs, and the rows job's
//     with the leader killed, so that the next term's raise waits for the hold.
func untrustedScript() []scripted {
	sc := []scripted{
		{after: 800 * time.Millisecond, kind: "job-role", dr: draw{target: 0.9, length: 1, variant: 5}},
		{after: 34 * time.Second, kind: "receiver-refuses", dr: draw{length: 0.6, variant: 0}},
		{after: 44 * time.Second, kind: "receiver-refuses", dr: draw{length: 0.8, variant: 1}},
		{after: 61 * time.Second, kind: "job-role", dr: draw{target: 0.3, length: 0.2, variant: 3}},
		{after: 64 * time.Second, kind: "job-role", dr: draw{target: 0.6, length: 0.6, variant: 4}},
	}
	attempts := len(poisonAttempts(markerJob))
	for i := range attempts {
		sc = append(sc, scripted{after: 55*time.Second + time.Duration(i)*time.Second, kind: "job-role",
			dr: draw{target: float64(i%len(nemesisJobNames)) / float64(len(nemesisJobNames)), length: (float64(i) + 0.5) / float64(attempts)}})
	}
	return sc
}

// untrustedScriptLength is how long untrustedScript's faults go on.
const untrustedScriptLength = 70 * time.Second

// TestNemesisUntrusted runs the nemesis on etcd with untrustedScript instead of the seed's
// draws: the http job's receiver refusing the token, alone, to every request and then to every
// other one; the job role trying each way to poison a fence; and the job role holding a fence,
// once while the leader runs and once while the next leader takes over. Besides the checker
// finding nothing, each fault must have done what it is for: refusals seen and judged alone,
// every attempt refused, the held fence's takeover judged.
func TestNemesisUntrusted(t *testing.T) {
	env := readEnv()
	s := &suite{env: env, seed: 1, reps: 1}
	s.bins = buildBinaries(t, len(env.etcd) == 0)
	s.pg = newPGServer(t, env)
	n, rep := s.nemesis(t, "etcd", untrustedScriptLength, untrustedScript())
	refused := 0
	for _, r := range n.rc.requests() {
		if r.Status == http.StatusConflict {
			refused++
		}
	}
	if refused < 2 {
		t.Errorf("the receiver refused %d requests, want at least 2 (one in each refusal)", refused)
	}
	if rep.untrusted.quietJudged != 2 {
		t.Errorf("%d refusals judged alone, want 2", rep.untrusted.quietJudged)
	}
	if want := len(poisonAttempts(markerJob)); n.poisonRefused != want {
		t.Errorf("%d of the job role's attempts refused, want %d", n.poisonRefused, want)
	}
	if len(n.holds) != 3 {
		t.Errorf("%d fences held by the job role, want 3", len(n.holds))
	}
	narrowed := 0
	for _, h := range n.holdsJudged() {
		if h.narrowJudged {
			narrowed++
		}
	}
	if rep.untrusted.holdsJudged != 2 || narrowed != 1 {
		t.Errorf("%d fence holds judged for the catch-up, %d for the narrowing, want 2 and 1", rep.untrusted.holdsJudged, narrowed)
	}
}

package e2e

import (
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

var (
	seedFlag   = flag.Uint64("e2e.seed", 0, "seed of the randomized scenarios; 0 picks one (printed, for replay)")
	repeatFlag = flag.Int("e2e.repeat", 2, "repetitions of each randomized scenario (frozen and crashed leader)")
	soakFlag   = flag.Bool("e2e.soak", false, "soak: repeat each randomized scenario 25 times (overrides -e2e.repeat)")
)

func TestMain(m *testing.M) { testenv.Main(m) }

// externalEnv names servers the suite did not start, to run the scenarios against.
type externalEnv struct {
	etcd     []string // E2E_ETCD_ENDPOINTS, host:port comma-separated
	postgres string   // E2E_POSTGRES_DSN, a postgres:// URL whose user may create databases
}

func readEnv() externalEnv {
	var env externalEnv
	for _, ep := range strings.Split(os.Getenv("E2E_ETCD_ENDPOINTS"), ",") {
		ep = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(ep), "http://"), "https://")
		if ep != "" {
			env.etcd = append(env.etcd, ep)
		}
	}
	env.postgres = strings.TrimSpace(os.Getenv("E2E_POSTGRES_DSN"))
	return env
}

// suite is what every scenario shares: the binaries and the Postgres server.
type suite struct {
	bins binaries
	env  externalEnv
	pg   *pgServer
	seed uint64
	reps int
	// backend is the election backend of the deployments, "" for etcd (see backends_test.go).
	backend string
}

// rand returns the random source of repetition rep of a scenario: a scenario and repetition
// replay exactly under the same -e2e.seed.
func (s *suite) rand(scenario string, rep int) *rand.Rand {
	h := uint64(0)
	for _, c := range scenario {
		h = h*31 + uint64(c)
	}
	return rand.New(rand.NewPCG(s.seed^h, uint64(rep)))
}

// TestE2E runs the fault scenarios against the scheduler binary, three replicas of it, a
// three-member etcd cluster of separate processes and Postgres; see RELIABILITY.md.
func TestE2E(t *testing.T) {
	env := readEnv()
	s := &suite{env: env, seed: *seedFlag, reps: *repeatFlag}
	if s.seed == 0 {
		s.seed = uint64(time.Now().UnixNano())
	}
	if *soakFlag {
		s.reps = 25
	}
	t.Logf("seed %d: replay with -e2e.seed=%d; %d repetitions of each randomized scenario", s.seed, s.seed, s.reps)
	if len(env.etcd) > 0 {
		t.Logf("etcd: external cluster %v (E2E_ETCD_ENDPOINTS)", env.etcd)
	}
	if env.postgres != "" {
		t.Log("postgres: external server (E2E_POSTGRES_DSN)")
	}
	s.bins = buildBinaries(t, len(env.etcd) == 0)
	s.pg = newPGServer(t, env)

	t.Run("FrozenLeader", s.frozenLeader)
	t.Run("CrashedLeader", s.crashedLeader)
	t.Run("RollingRestart", s.rollingRestart)
	t.Run("LeaderCutOffFromEtcd", s.leaderCutOff)
	t.Run("LeaderKeyDeleted", s.leaderKeyDeleted)
	if len(env.etcd) == 0 {
		t.Run("EtcdFaults", s.etcdFaults)
	} else {
		t.Log("EtcdFaults: not applicable with an external etcd (E2E_ETCD_ENDPOINTS): the scenario kills and restarts etcd members")
	}
	t.Run("PostgresRestart", s.postgresRestart)
	t.Run("SlowStore", s.slowStore)
	t.Run("OrphanOutlivedByNextSlot", s.orphanOutlived)
	t.Run("OrphanBehindNewerRun", s.orphanBehindNewerRun)
	t.Run("AttemptsCountedWhileStoreDown", s.attemptsWhileStoreDown)
	t.Run("DataDirInUse", s.dataDirInUse)
	t.Run("LeaselessKey", s.leaselessKey)
	t.Run("JobRoleRaisesFence", s.jobRoleRaisesFence)
	t.Run("SQLJobRole", s.sqlJobRole)
	t.Run("ReceiverRefusesToken", s.receiverRefuses)
	t.Run("JobsCannotReadDaemonSecrets", s.jobsCannotReadSecrets)
	t.Run("JobUserCannotReadSecretFiles", s.jobUserCannotReadSecretFiles)
	t.Run("OutcomeWriteLost", s.outcomeWriteLost)
	t.Run("Outbox", s.outboxFaults)
	t.Run("BackfillLeaderKilled", s.backfillKill)
	t.Run("FailureNotifications", s.failureNotifications)
	t.Run("StoreSplit", s.storeSplit)
	t.Run("Backends", s.backends)
	t.Run("ClusterView", s.clusterView)
}

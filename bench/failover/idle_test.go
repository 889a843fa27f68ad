package failover

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// idleWindow is how long BenchmarkDaemonIdle measures the daemon's CPU.
const idleWindow = time.Minute

// BenchmarkDaemonIdle measures the steady cost of a leading daemon whose table has no job due:
// one `scheduler run` process (real etcd, Postgres with default settings) with n exec jobs
// that fire once a year ("0 0 0 1 1 *"). Once it leads and has settled, the process's CPU time
// is read from /proc/<pid>/stat over a minute (cpu-s/min), and its resident set from
// /proc/<pid>/status (VmRSS then, VmHWM the peak, start included). ready-s is the time from
// the process's start to the runner's "leading" line: the configuration's load, the takeover of
// n jobs and its catch-up.
//
//	go test -run '^$' -bench DaemonIdle -benchtime 1x -timeout 30m ./bench/failover/
func BenchmarkDaemonIdle(b *testing.B) {
	bin := testenv.MustBuild(b, "scheduler/cmd/scheduler")
	etcd := testenv.MustEtcd(b)
	pg := testenv.MustPostgres(b)
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			var cpu, rss, hwm, ready float64
			for range b.N {
				c := newCluster(b, bin)
				cfg := c.config("n1", etcd.Endpoint(0), pg.CreateDatabase(b), fmt.Sprintf("/bench/idle-%d", n), "unused", ttl)
				c.rewrite(cfg, func(s string) string { return s[:strings.Index(s, "jobs:\n")] + "jobs:\n" + idleJobs(n) })
				c.migrate(cfg)
				start := time.Now()
				r := c.start("n1", cfg)
				l := c.await("leading", 5*time.Minute, func() (logLine, bool) {
					ls := c.lines("n1", "leading", start)
					if len(ls) == 0 {
						return logLine{}, false
					}
					return ls[0], true
				})
				ready += l.TS.Sub(start).Seconds()
				time.Sleep(5 * time.Second) // the takeover's garbage collected
				pid := r.cmd.Process.Pid
				cpu0, t0 := procCPU(b, pid), time.Now()
				time.Sleep(idleWindow)
				cpu += (procCPU(b, pid) - cpu0).Seconds() / time.Since(t0).Minutes()
				rss += procStatusMB(b, pid, "VmRSS:")
				hwm += procStatusMB(b, pid, "VmHWM:")
				c.killAll()
			}
			k := float64(b.N)
			b.ReportMetric(cpu/k, "cpu-s/min")
			b.ReportMetric(rss/k, "rss-MB")
			b.ReportMetric(hwm/k, "rss-peak-MB")
			b.ReportMetric(ready/k, "ready-s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// idleJobs is a YAML list of n exec jobs of which none is due for months.
func idleJobs(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "  - {name: idle%d, schedule: \"0 0 0 1 1 *\", type: exec, command: [\"/bin/true\"], timeout: 10s}\n", i)
	}
	return sb.String()
}

// procCPU is the user and system CPU time of process pid so far.
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and stime are the 12th and
	// 13th of them, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100)
}

// procStatusMB reads a kB field of process pid's /proc status, in MB.
func procStatusMB(tb testing.TB, pid int, field string) float64 {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

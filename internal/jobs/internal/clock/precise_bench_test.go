package clock

import (
	"net"
	"slices"
	"testing"
	"time"
)

// BenchmarkTimerLateness measures how late a timer armed for an instant 5 ms ahead delivers it:
// a time.Timer (what the runner waited with before) beside TimerAt. One op is one wait;
// late-p50-µs and late-p99-µs are over the ops. A loopback connection stays open throughout, as
// the daemon's to etcd and the store do: the runtime then sleeps in its network poller, whose
// timeouts are whole milliseconds.
//
//	go test -run '^$' -bench TimerLateness -benchtime 400x ./internal/jobs/internal/clock/
func BenchmarkTimerLateness(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	peer, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	for _, tc := range []struct {
		name  string
		timer func(at time.Time) Timer
	}{
		{"time.Timer", func(at time.Time) Timer { return Real{}.NewTimer(time.Until(at)) }},
		{"TimerAt", Real{}.TimerAt},
	} {
		b.Run(tc.name, func(b *testing.B) {
			late := make([]time.Duration, 0, b.N)
			for range b.N {
				at := time.Now().Add(5 * time.Millisecond)
				tm := tc.timer(at)
				<-tm.C()
				late = append(late, time.Since(at))
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Nanoseconds())/1e3, "late-p50-µs")
			b.ReportMetric(float64(late[len(late)*99/100].Nanoseconds())/1e3, "late-p99-µs")
		})
	}
}

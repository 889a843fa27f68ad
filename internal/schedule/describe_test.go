package schedule

import (
	"testing"
	"time"
)

func TestSchedule_Describe(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"* * * * *", "every minute"},
		{"*/15 * * * *", "every 15 minutes"},
		{"0 * * * *", "every hour"},
		{"5 * * * *", "every hour at minute 5"},
		{"@hourly", "every hour"},
		{"0 2 * * *", "at 02:00 every day"},
		{"30 2 * * *", "at 02:30 every day"},
		{"@daily", "at 00:00 every day"},
		{"@midnight", "at 00:00 every day"},
		{"0 0 * * 0", "at 00:00 on Sunday"},
		{"@weekly", "at 00:00 on Sunday"},
		{"@monthly", "at 00:00 on day 1 of the month"},
		{"@yearly", "at 00:00 on 1 January"},
		{"0 2 1 * *", "at 02:00 on day 1 of the month"},
		{"0 2 1,15 * *", "at 02:00 on days 1 and 15 of the month"},
		{"0 9 24 dec *", "at 09:00 on 24 December"},
		{"30 9 * * 1-5", "at 09:30 on weekdays"},
		{"30 9 * * mon-fri", "at 09:30 on weekdays"},
		{"0 10 * * sat,sun", "at 10:00 on weekends"},
		{"0 8 * * 1,3,5", "at 08:00 on Monday, Wednesday and Friday"},
		{"0 8 * * 0,1", "at 08:00 on Monday and Sunday"},
		{"0 8 * * 0-6", "at 08:00 every day"},
		{"*/5 * * * sun-sat", "every 5 minutes"},
		{"0 9,17 * * *", "at 09:00 and 17:00 every day"},
		{"0 9 * 1-3 *", "at 09:00 every day in January, February and March"},
		{"0 0 */6 * * *", "every 6 hours"},
		{"15 */2 * * *", "every 2 hours at minute 15"},
		{"* * * jan *", "every minute in January"},
		{"*/10 2 * * *", "every 10 minutes from 02:00 to 02:59"},
		{"*/10 * * * * *", "every 10 seconds"},
		{"* * * * * *", "every second"},
		{"15 30 4 * * *", "at 04:30:15 every day"},
		{"*/30 * * * 1-5", "every 30 minutes on weekdays"},
		{"@every 10s", "every 10 seconds"},
		{"@every 1s", "every second"},
		{"@every 90m", "every 90 minutes"},
		{"@every 2h", "every 2 hours"},
		{"@every 24h", "every day"},
		{"@every 1h30m5s", "every 1h30m5s"},
		// Shapes without words fall back to the expression itself.
		{"*/7 * * * *", "*/7 * * * *"},
		{"0 0 1 * 1", "0 0 1 * 1"},
		{"0 1-5/2 * * *", "0 1-5/2 * * *"},
		{"30 * * * * *", "30 * * * * *"},
		{"0  2 *  * *", "at 02:00 every day"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Describe(); got != tc.want {
				t.Fatalf("Describe(%q)=%q, want %q", tc.spec, got, tc.want)
			}
		})
	}
}

package redislock

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/lease/leasetest"
)

// TestCampaigner_HandWrittenKeys: the lock and the counter as someone else wrote them. A lock
// no campaigner could have written (no expiry, or a value of another shape) is given an expiry
// or removed, and the removal logged, so the election goes on; a counter that is no token is
// replaced by the floor; tokens are counted exactly up to the largest int64, and a counter
// there stops the campaign at error level, naming the key and the remedy.
func TestCampaigner_HandWrittenKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(t *testing.T, s *server, floor int64) (*leasetest.Campaign, *observer.ObservedLogs) {
		core, logs := observer.New(zapcore.DebugLevel)
		c, err := New(s.cli, Config{Key: testKey, Node: "a", TTL: 2 * time.Second,
			Floor: func(context.Context) (int64, error) { return floor, nil }}, zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		var seq atomic.Int64
		return leasetest.Run(t, c, &seq, false), logs
	}
	set := func(t *testing.T, s *server, key, value string, ttl time.Duration) {
		t.Helper()
		if err := s.cli.Set(ctx, key, value, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}

	for name, value := range map[string]struct {
		value string
		ttl   time.Duration
		words string
	}{
		"LockWithoutExpiry":      {lockValue(5, "x", "intruder"), 0, "no expiry"},
		"LockOfAnotherShape":     {"held by hand", 24 * time.Hour, "not a campaigner"},
		"LockOfAnotherShapeNoPX": {"x", 0, "not a campaigner"},
		"EmptyLock":              {"", 24 * time.Hour, "not a campaigner"}, // removed, and logged all the same
		// A token past int64: before, the shape check took it, and every replica waited out its hour.
		"LockTokenPastInt64": {"99999999999999999999 x intruder", time.Hour, "not a campaigner"},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			set(t, s, testKey, value.value, value.ttl)
			r, logs := start(t, s, 10)
			e := leasetest.Next(t, r.Won, 15*time.Second, "a term despite the lock written by hand")
			if e.Term.Token != 11 {
				t.Fatalf("token=%d, want 11 (above the floor)", e.Term.Token)
			}
			if !warned(logs, value.words, value.value) {
				t.Fatalf("no warning naming %q and the value %q: %v", value.words, value.value, messages(logs))
			}
		})
	}

	t.Run("CounterNotAToken", func(t *testing.T) {
		for _, v := range []string{"abc", "-5", "1.5", "99999999999999999999", "0007", ""} {
			s := newServer(t)
			set(t, s, counterKey(testKey), v, 0)
			r, logs := start(t, s, 10)
			if e := leasetest.Next(t, r.Won, 15*time.Second, "a term"); e.Term.Token != 11 {
				t.Fatalf("counter %q: token=%d, want 11 (the floor's next)", v, e.Term.Token)
			}
			if !warned(logs, "not a token", v) {
				t.Fatalf("counter %q: no warning naming it: %v", v, messages(logs))
			}
			r.Stop()
		}
	})

	t.Run("CounterAbovePrecisionOfADouble", func(t *testing.T) {
		s := newServer(t)
		const at = int64(1)<<53 + 1
		set(t, s, counterKey(testKey), strconv.FormatInt(at, 10), 0)
		r, _ := start(t, s, 10)
		for want := at + 1; want <= at+3; want++ {
			if e := leasetest.Next(t, r.Won, 15*time.Second, "a term"); e.Term.Token != want {
				t.Fatalf("token=%d, want %d: one above the last", e.Term.Token, want)
			}
		}
		got, err := s.cli.Get(ctx, counterKey(testKey)).Result()
		if err != nil || got != strconv.FormatInt(at+3, 10) {
			t.Fatalf("counter %q (%v), want %d", got, err, at+3)
		}
	})

	t.Run("CounterAtTheMaximum", func(t *testing.T) {
		s := newServer(t)
		set(t, s, counterKey(testKey), strconv.FormatInt(math.MaxInt64-1, 10), 0)
		r, logs := start(t, s, 10)
		if e := leasetest.Next(t, r.Won, 15*time.Second, "the last token"); e.Term.Token != math.MaxInt64 {
			t.Fatalf("token=%d, want %d", e.Term.Token, int64(math.MaxInt64))
		}
		deadline := time.Now().Add(10 * time.Second)
		for !hasError(logs, "SET "+counterKey(testKey)) {
			if time.Now().After(deadline) {
				t.Fatalf("no error naming the counter and its remedy: %v", messages(logs))
			}
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case e := <-r.Won:
			t.Fatalf("won term %d past the largest token", e.Term.Token)
		default:
		}
		if n, err := s.cli.Exists(ctx, testKey).Result(); err != nil || n != 0 {
			t.Fatalf("lock exists=%d (%v), want none taken past the largest token", n, err)
		}
	})
}

// warned says whether logs hold a warning whose fields mention both words and value.
func warned(logs *observer.ObservedLogs, words, value string) bool {
	for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).All() {
		text := e.Message
		for k, v := range e.ContextMap() {
			text += " " + k + "=" + toString(v)
		}
		if strings.Contains(text, words) && strings.Contains(text, value) {
			return true
		}
	}
	return false
}

// hasError says whether logs hold an error line mentioning words.
func hasError(logs *observer.ObservedLogs, words string) bool {
	for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
		text := e.Message
		for _, v := range e.ContextMap() {
			text += " " + toString(v)
		}
		if strings.Contains(text, words) {
			return true
		}
	}
	return false
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// messages lists what logs hold, for a failure's message.
func messages(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		out = append(out, e.Level.String()+" "+e.Message+" "+toString(e.ContextMap()["error"]))
	}
	return out
}

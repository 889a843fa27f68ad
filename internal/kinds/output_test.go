package kinds

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"Empty", 10, nil, ""},
		{"Fits", 10, []string{"abc", "def"}, "abcdef"},
		{"Exactly", 10, []string{"0123456789"}, "0123456789"},
		{"HeadAndTail", 10, []string{"01234", "56789", "abcde"}, "01234\n[... 5 bytes omitted ...]\nabcde"},
		{"OneBigWrite", 10, []string{"0123456789abcdefghij"}, "01234\n[... 10 bytes omitted ...]\nfghij"},
		{"ManySmallWrites", 4, strings.Split("abcdefghijklmnopqrstuvwxyz", ""), "ab\n[... 22 bytes omitted ...]\nyz"},
		{"HeadEndsWithNewline", 8, []string{"abc\n", "xxxxxxxx", "\nxyz"}, "abc\n[... 8 bytes omitted ...]\n\nxyz"},
		// "é" is two bytes: a cut inside it drops the partial rune on each side.
		{"CutRune", 6, []string{"ab\u00e9\u00e9\u00e9cd"}, "ab\n[... 6 bytes omitted ...]\ncd"},
		{"InvalidUTF8AndNUL", 0, []string{"a\xffb\x00c"}, "a\uFFFDb\uFFFDc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapture(tt.limit)
			total := 0
			for _, w := range tt.writes {
				n, err := c.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				total += len(w)
			}
			if got := c.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
			if c.Len() != int64(total) {
				t.Fatalf("Len() = %d, want %d", c.Len(), total)
			}
		})
	}
}

// TestCapture_Random compares Capture with cutting the whole text, for random writes.
func TestCapture_Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		limit := 2 + rng.IntN(64)
		c := NewCapture(limit)
		var all strings.Builder
		for w := rng.IntN(20); w > 0; w-- {
			b := make([]byte, rng.IntN(3*limit))
			for k := range b {
				b[k] = 'a' + byte(rng.IntN(26))
			}
			_, _ = c.Write(b)
			all.Write(b)
		}
		s := all.String()
		want := s
		if len(s) > limit {
			h := limit / 2
			want = s[:h] + "\n[... " + strconv.Itoa(len(s)-limit) + " bytes omitted ...]\n" + s[len(s)-(limit-h):]
		}
		if got := c.String(); got != want {
			t.Fatalf("limit %d, %d bytes: got %q, want %q", limit, len(s), got, want)
		}
	}
}

func TestCapture_Concurrent(t *testing.T) {
	c := NewCapture(1000)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				_, _ = c.Write([]byte("0123456789"))
			}
		}()
	}
	wg.Wait()
	if c.Len() != 40000 {
		t.Fatalf("Len() = %d, want 40000", c.Len())
	}
	if s := c.String(); !utf8.ValidString(s) || !strings.Contains(s, "[... 39000 bytes omitted ...]") {
		t.Fatalf("String() = %q", s)
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt("short", 0); got != "short" {
		t.Fatalf("Excerpt = %q", got)
	}
	long := strings.Repeat("x", 2*DefaultOutputLimit)
	if got := Excerpt(long, 0); len(got) > DefaultOutputLimit+40 {
		t.Fatalf("Excerpt kept %d bytes of %d, want about %d", len(got), len(long), DefaultOutputLimit)
	}
}

// TestCapture_DefaultFitsTheLedger: with the default limit, the excerpt of a huge output, marker
// included, fits what the ledger keeps of an output (its runs table holds at most this many
// characters), so the store has nothing to cut and the marker survives.
func TestCapture_DefaultFitsTheLedger(t *testing.T) {
	const ledgerChars = 4096
	c := NewCapture(0)
	line := []byte(strings.Repeat("é", 50) + "\n")
	for range 1 << 14 {
		_, _ = c.Write(line)
	}
	got := c.String()
	if n := utf8.RuneCountInString(got); n > ledgerChars {
		t.Fatalf("excerpt has %d characters, want at most %d", n, ledgerChars)
	}
	if !strings.Contains(got, " bytes omitted ...]\n") || !strings.HasPrefix(got, "é") || !strings.HasSuffix(got, "é\n") {
		t.Fatalf("excerpt lacks its head, marker or tail: %.40q ... %q", got, got[len(got)-20:])
	}
}

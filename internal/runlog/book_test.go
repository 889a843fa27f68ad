package runlog

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNow is a settable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// TestBook_Read: a run's output is read from an offset, a retry goes on with the same output,
// the oldest bytes past MaxKept are dropped (the offset says so), and a run is forgotten Linger
// after its last attempt ended, not before.
func TestBook_Read(t *testing.T) {
	clk := &fakeNow{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	w, done := b.Open("job", "7")
	_, _ = io.WriteString(w, "hello\nwor")
	if c, ok := b.Read("7", 0); !ok || string(c.Data) != "hello\n" || c.Offset != 0 || c.Ended {
		t.Fatalf("read %+v %v, want the lines so far, not ended", c, ok)
	}
	done()
	done() // a second call changes nothing
	if c, _ := b.Read("7", 3); string(c.Data) != "lo\nwor" || c.Offset != 3 || !c.Ended {
		t.Fatalf("read from 3 after the attempt = %+v, want the rest, the unended line too, ended", c)
	}
	w, done = b.Open("job", "7") // the retry
	_, _ = io.WriteString(w, strings.Repeat("x", MaxKept-1)+"\n")
	c, _ := b.Read("7", 0)
	if c.Offset != 9 || len(c.Data) != MaxKept || c.Ended {
		t.Fatalf("read after overflow: offset %d, %d bytes, ended %v; want offset 9 and MaxKept bytes", c.Offset, len(c.Data), c.Ended)
	}
	done()
	if _, ok := b.Read("8", 0); ok {
		t.Fatal("a run never opened was read")
	}
	clk.add(Linger)
	b.Open("other", "9")
	if _, ok := b.Read("7", 0); !ok {
		t.Fatal("run forgotten before Linger passed")
	}
	clk.add(time.Second)
	b.Open("other", "10")
	if _, ok := b.Read("7", 0); ok {
		t.Fatal("run kept past Linger after its end")
	}
	if _, ok := b.Read("9", 0); !ok {
		t.Fatal("a run still writing was forgotten")
	}
}

// TestBook_ServeHTTP: a follower over real HTTP gets the output as it is written, from its
// offset, and the stream ends with the attempt; an unknown run is 404, a bad offset 400.
func TestBook_ServeHTTP(t *testing.T) {
	b := New(nil, nil)
	mux := http.NewServeMux()
	mux.Handle("GET /runs/{id}/output", b)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	w, done := b.Open("job", "3")
	_, _ = io.WriteString(w, "line 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/runs/3/output?from=5", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Output-Offset") != "5" {
		t.Fatalf("status %s, offset %q; want 200 from 5", resp.Status, resp.Header.Get("Output-Offset"))
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "1\n" {
		t.Fatalf("first line %q (%v), want the rest of line 1", line, err)
	}
	_, _ = io.WriteString(w, "line 2\n") // written while the follower waits
	if line, err := r.ReadString('\n'); err != nil || line != "line 2\n" {
		t.Fatalf("second line %q (%v)", line, err)
	}
	done()
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Fatalf("after the attempt ended: %q, %v; want the stream's end", rest, err)
	}
	for url, want := range map[string]int{"/runs/4/output": http.StatusNotFound, "/runs/3/output?from=x": http.StatusBadRequest} {
		resp, err := http.Get(srv.URL + url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", url, resp.Status, want)
		}
	}
}

// TestBook_Scrub: what is kept is scrubbed line by line, so a secret written in two pieces is
// replaced whole; a line longer than 2*Overlap is kept without waiting for its end, all but the
// last bytes its Scrubber holds back.
func TestBook_Scrub(t *testing.T) {
	b := New(nil, Fixed{Func: func(s string) string { return strings.ReplaceAll(s, "s3cret", "[redacted]") }, MaxSecret: 6})
	w, done := b.Open("job", "1")
	_, _ = io.WriteString(w, "password s3")
	_, _ = io.WriteString(w, "cret\n")
	if c, _ := b.Read("1", 0); string(c.Data) != "password [redacted]\n" {
		t.Fatalf("kept %q, want the secret scrubbed", c.Data)
	}
	_, _ = io.WriteString(w, strings.Repeat("y", 2*Overlap+1))
	if c, _ := b.Read("1", 0); len(c.Data) != len("password [redacted]\n")+Overlap+1 {
		t.Fatalf("kept %d bytes, want the long line kept before its end but for Overlap bytes", len(c.Data))
	}
	done()
	if c, _ := b.Read("1", 0); len(c.Data) != len("password [redacted]\n")+2*Overlap+1 {
		t.Fatalf("kept %d bytes at the attempt's end, want the whole line", len(c.Data))
	}
}

// TestBook_ScrubSecretAcrossLongLine: a secret printed where a long line is first kept before
// its end, half before the cut and half after a pause, is replaced whole: no part of it is ever
// readable, and the line's bytes are kept once each, the rest at the attempt's end. So is one
// longer than Overlap (a PEM key, say): the Book holds back as much as the longest secret its
// Redactor names. Before, the first half of such a secret was kept as printed.
func TestBook_ScrubSecretAcrossLongLine(t *testing.T) {
	for _, secret := range []string{"adm1n-T0ken-0123456789abcdef", "-----BEGIN KEY-----" + strings.Repeat("k3Y", Overlap) + "-----END KEY-----"} {
		scrub := strings.NewReplacer(secret, "[redacted]").Replace
		b := New(nil, Fixed{Func: scrub, MaxSecret: len(secret)})
		w, done := b.Open("job", "1")
		overlap, half := max(Overlap, len(secret)), len(secret)/2
		pieces := []string{strings.Repeat("A", 2*overlap-half/2) + secret[:half], secret[half:], strings.Repeat("B", 100)}
		for _, p := range pieces {
			_, _ = io.WriteString(w, p)
			c, _ := b.Read("1", 0)
			if leaked := partOf(string(c.Data), secret); leaked != "" {
				t.Fatalf("secret of %d bytes: after %d bytes the run log shows %d bytes of it", len(secret), len(c.Data), len(leaked))
			}
		}
		done()
		c, _ := b.Read("1", 0)
		if want := scrub(strings.Join(pieces, "")); string(c.Data) != want {
			t.Fatalf("secret of %d bytes: kept %d bytes, want the whole line scrubbed (%d bytes)", len(secret), len(c.Data), len(want))
		}
	}
}

// partOf returns the longest start of secret, of 4 bytes or more, that text shows; "" if none.
func partOf(text, secret string) string {
	for n := len(secret); n >= 4; n-- {
		if strings.Contains(text, secret[:n]) {
			return secret[:n]
		}
	}
	return ""
}

// TestBook_MaxTotal: past MaxTotal for every run together, a run that writes keeps only its
// newest MinKept bytes; the bytes of forgotten runs no longer count.
func TestBook_MaxTotal(t *testing.T) {
	clk := &fakeNow{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	b := New(clk.now, nil)
	line := strings.Repeat("z", MaxKept-1) + "\n"
	var dones []func()
	for i := range MaxTotal / MaxKept {
		w, done := b.Open("job", strconv.Itoa(i))
		_, _ = io.WriteString(w, line)
		dones = append(dones, done)
	}
	w, done := b.Open("job", "last")
	_, _ = io.WriteString(w, line)
	if c, _ := b.Read("last", 0); len(c.Data) != MinKept {
		t.Fatalf("a run past MaxTotal keeps %d bytes, want MinKept", len(c.Data))
	}
	for _, d := range dones {
		d()
	}
	done()
	clk.add(Linger + time.Second)
	w, _ = b.Open("job", "after")
	_, _ = io.WriteString(w, line)
	if c, _ := b.Read("after", 0); len(c.Data) != MaxKept {
		t.Fatalf("a run after the others were forgotten keeps %d bytes, want MaxKept", len(c.Data))
	}
}

// TestBook_ScrubMultiLineSecret: a secret of many lines (a PEM key the configuration names) is
// printed in two writes cut between two of its lines, as a program writing line by line does.
// No part of it is ever kept, and the whole output is kept scrubbed at the attempt's end.
// Before, each write's lines were scrubbed on their own at their end, and both halves of the
// key were kept as printed.
func TestBook_ScrubMultiLineSecret(t *testing.T) {
	var lines []string
	for range 50 {
		lines = append(lines, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC70123456789ab")
	}
	secret := "-----BEGIN PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END PRIVATE KEY-----"
	scrub := strings.NewReplacer(secret, "[redacted]").Replace
	b := New(nil, Fixed{Func: scrub, MaxSecret: len(secret), Lines: true})
	w, done := b.Open("job", "1")
	cut := strings.Index(secret, "\n"+lines[25]) + 1
	for _, p := range []string{"key:\n" + secret[:cut], secret[cut:] + "\nbye\n"} {
		_, _ = io.WriteString(w, p)
		c, _ := b.Read("1", 0)
		if leaked := partOf(string(c.Data), secret); leaked != "" {
			t.Fatalf("after %d bytes the run log shows %d bytes of the secret", len(c.Data), len(leaked))
		}
	}
	done()
	if c, _ := b.Read("1", 0); string(c.Data) != "key:\n[redacted]\nbye\n" {
		t.Fatalf("kept %q at the attempt's end, want the whole output scrubbed", c.Data)
	}
}

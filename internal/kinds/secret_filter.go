package kinds

import (
	"bytes"
	"io"
	"strings"
)

// redactedSecret is what a run's secret is replaced with in what the job prints.
const redactedSecret = "[redacted]"

// secretFilter writes to w what is written to it with every occurrence of secret replaced by
// redactedSecret, in front of both the stored output (before it is cut to its head and tail,
// which could split the secret) and the live one. A secret split across writes is caught: the
// end of a write that could begin the secret is held back until the next write or Flush.
type secretFilter struct {
	w       io.Writer
	secret  []byte
	pending []byte
}

// newSecretFilter returns w filtered of secret; w itself when there is no secret.
func newSecretFilter(w io.Writer, secret string) io.Writer {
	if secret == "" {
		return w
	}
	return &secretFilter{w: w, secret: []byte(secret)}
}

// Write filters p; it reports len(p) written unless w fails.
func (f *secretFilter) Write(p []byte) (int, error) {
	buf := append(f.pending, p...)
	buf = bytes.ReplaceAll(buf, f.secret, []byte(redactedSecret))
	keep := f.overlap(buf)
	if _, err := f.w.Write(buf[:len(buf)-keep]); err != nil {
		return 0, err
	}
	f.pending = append(f.pending[:0], buf[len(buf)-keep:]...)
	return len(p), nil
}

// Flush writes what was held back.
func (f *secretFilter) Flush() error {
	if len(f.pending) == 0 {
		return nil
	}
	_, err := f.w.Write(f.pending)
	f.pending = f.pending[:0]
	return err
}

// overlap returns the length of the longest end of buf that begins the secret.
func (f *secretFilter) overlap(buf []byte) int {
	n := min(len(buf), len(f.secret)-1)
	for ; n > 0; n-- {
		if bytes.HasPrefix(f.secret, buf[len(buf)-n:]) {
			return n
		}
	}
	return 0
}

// secretWords returns what of a run's secret is redacted from its output: its MAC (after the
// run id and the dot), which is as good as the whole and contains it. The run id alone is no
// secret.
func secretWords(secret string) string {
	if i := strings.IndexByte(secret, '.'); i >= 0 {
		return secret[i+1:]
	}
	return secret
}

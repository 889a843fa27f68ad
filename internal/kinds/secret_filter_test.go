package kinds

import (
	"bytes"
	"strings"
	"testing"
)

// TestSecretFilter_SplitWrites: the secret is replaced however the output is cut into writes,
// and nothing else is lost or held back for good.
func TestSecretFilter_SplitWrites(t *testing.T) {
	const secret = "0123456789abcdef"
	text := "a " + secret + " b 0123 c " + secret + secret + " 0123456789abcde"
	want := strings.ReplaceAll(text, secret, redactedSecret)
	for size := 1; size <= len(text); size++ {
		var out bytes.Buffer
		f := newSecretFilter(&out, secret).(*secretFilter)
		for i := 0; i < len(text); i += size {
			if _, err := f.Write([]byte(text[i:min(i+size, len(text))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("writes of %d bytes: %q, want %q", size, out.String(), want)
		}
	}
}

// TestExecOutput_SecretAcrossTheCut: a secret printed where the stored output's head ends is
// redacted before the output is cut, so no part of it is kept; nor is its MAC printed alone.
func TestExecOutput_SecretAcrossTheCut(t *testing.T) {
	const secret = "7.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	mac := secretWords(secret)
	out := NewCapture(DefaultOutputLimit)
	f := newSecretFilter(out, mac).(*secretFilter)
	head := strings.Repeat("x", 1834)
	for _, w := range []string{head, secret, strings.Repeat("y", 5000), mac, "\n"} {
		if _, err := f.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for i := 0; i+8 <= len(mac); i++ {
		if strings.Contains(got, mac[i:i+8]) {
			t.Fatalf("stored output keeps part of the secret (%q):\n%s", mac[i:i+8], got)
		}
	}
}

package logs

import (
	"strings"
	"testing"
)

func TestTerminalWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"Plain", []string{"line 1\n\tindented é €\n"}, "line 1\n\tindented é €\n"},
		{"WindowTitle", []string{"\x1b]0;owned\x07after"}, `\x1b]0;owned\x07after`},
		{"ClearScreen", []string{"\x1b[2J\x1b[31mred\x1b[0m"}, `\x1b[2J\x1b[31mred\x1b[0m`},
		{"CarriageReturnAndDelete", []string{"shown\rhidden\x7f"}, `shown\x0dhidden\x7f`},
		{"C1ControlSequenceIntroducer", []string{"a\u009b2Jb"}, `a\u009b2Jb`},
		{"NotUTF8", []string{"a\xff\xfeb"}, `a\xff\xfeb`},
		{"Replacement", []string{"a\uFFFDb"}, "a\uFFFDb"},
		{"CharacterSplitBetweenWrites", []string{"caf\xc3", "\xa9 \xe2\x82", "\xac"}, "café €"},
		{"EscapeSplitBetweenWrites", []string{"\xc2", "\x9b"}, `\u009b`},
		{"EndsInsideACharacter", []string{"ok\xe2\x82"}, `ok\xe2\x82`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			w := NewTerminalWriter(&b)
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tc.want {
				t.Fatalf("wrote %q, want %q", got, tc.want)
			}
			if got := Escape(strings.Join(tc.writes, "")); got != tc.want {
				t.Fatalf("Escape = %q, want %q", got, tc.want)
			}
		})
	}
}

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"scheduler/cmd/scheduler/internal/config"
)

func TestNewLogger_DurationsCarryUnits(t *testing.T) {
	for _, format := range []string{"json", "console", "auto"} {
		var buf bytes.Buffer
		lg, err := newLogger(config.LogConfig{Level: "info", Format: format}, &buf)
		if err != nil {
			t.Fatal(err)
		}
		lg.Info("shutting down", zap.Duration("grace", 30*time.Second), zap.Duration("took", 1500*time.Millisecond))
		want := []string{`"grace":"30s"`, `"took":"1.5s"`}
		if format == "console" {
			want = []string{`"grace": "30s"`, `"took": "1.5s"`}
		}
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("format %s: %q lacks %s", format, buf.String(), w)
			}
		}
	}
}

func TestLogFormat(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tty := openTerminal(t)
	for _, tc := range []struct {
		format string
		w      io.Writer
		want   string
	}{
		{"auto", f, "json"},
		{"auto", &bytes.Buffer{}, "json"},
		{"auto", tty, "console"},
		{"json", tty, "json"},
		{"console", f, "console"},
	} {
		if got := logFormat(tc.format, tc.w); got != tc.want {
			t.Errorf("logFormat(%s, %T)=%s, want %s", tc.format, tc.w, got, tc.want)
		}
	}
	var buf bytes.Buffer
	if _, err := newLogger(config.LogConfig{Level: "info", Format: "xml"}, &buf); err == nil {
		t.Error("newLogger accepted format xml")
	}
}

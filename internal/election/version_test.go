package election

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/testenv"
)

func TestVersionProblem(t *testing.T) {
	for _, tc := range []struct {
		version string
		old     bool
		why     string // part of the reason, for old versions
	}{
		{"2.3.8", true, "wall clock"},
		{"3.3.27", true, "wall clock"},
		{"3.4.23", true, "wall clock"},
		{"3.4.45", true, "wall clock"},
		{"v3.4.38", true, "wall clock"},
		{"3.5.0", true, "#17780"},
		{"3.5.0-rc.0", true, "#17780"},
		{"3.5.13", true, "#17780"},
		{"3.5.14", true, "3.5.23"},
		{"3.5.22", true, "3.5.23"},
		{"3.5.23-rc.1", true, "3.5.23"},
		{"3.5.23", false, ""},
		{"3.5.24", false, ""},
		{"3.5.100", false, ""},
		{"3.6", true, "3.6.5"},
		{"3.6.0", true, "3.6.5"},
		{"3.6.4", true, "3.6.5"},
		{"3.6.5-alpha.0", true, "3.6.5"},
		{"3.6.5", false, ""},
		{"3.6.5+git", false, ""},
		{" v3.6.7 ", false, ""},
		{"3.7.0-alpha.0", false, ""},
		{"3.7.3", false, ""},
		{"3.10.0", false, ""},
		{"4.0.0", false, ""},
		{"", true, "not understood"},
		{"3", true, "not understood"},
		{"three.five", true, "not understood"},
		{"3.5.x", true, "not understood"},
		{"3.5.+1", true, "not understood"},
		{"3..5", true, "not understood"},
		{"3.5.23.1", true, "not understood"},
	} {
		got := versionProblem(tc.version)
		if (got != "") != tc.old || !strings.Contains(got, tc.why) {
			t.Errorf("versionProblem(%q) = %q, want old=%v with %q", tc.version, got, tc.old, tc.why)
		}
	}
}

func TestCheckServerVersions(t *testing.T) {
	t.Run("OldServerIsWarned", func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		versions := map[string]string{"m1:2379": "3.5.9", "m2:2379": "3.6.5", "m3:2379": ""}
		checkVersions(testContext(t), []string{"m1:2379", "m2:2379", "m3:2379", "m4:2379"}, func(_ context.Context, ep string) (string, error) {
			v, ok := versions[ep]
			if !ok {
				return "", errors.New("unreachable")
			}
			return v, nil
		}, zap.New(core))
		warned := map[string]string{}
		for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).All() {
			f := e.ContextMap()
			warned[f["endpoint"].(string)] = f["version"].(string)
			if !strings.Contains(e.Message, "3.5.23") || f["why"] == "" {
				t.Errorf("warning %q %v: want the minimum in the message and a reason", e.Message, f)
			}
		}
		if len(warned) != 2 || warned["m1:2379"] != "3.5.9" || warned["m3:2379"] != "" {
			t.Fatalf("warned about %v, want m1 (3.5.9) and m3 (no version)", warned)
		}
		if n := logs.FilterMessage("etcd server version not checked").FilterField(zap.String("endpoint", "m4:2379")).Len(); n != 1 {
			t.Fatalf("%d lines about the unreachable endpoint, want 1", n)
		}
	})
	t.Run("EmbeddedServerIsRecent", func(t *testing.T) {
		etcd := testenv.MustEtcd(t)
		core, logs := observer.New(zapcore.InfoLevel)
		CheckServerVersions(testContext(t), etcd.Client(t), zap.New(core))
		if w := logs.FilterLevelExact(zapcore.WarnLevel).All(); len(w) != 0 {
			t.Fatalf("warnings for the embedded server: %v", w)
		}
		if got := logs.FilterMessage("etcd server").All(); len(got) != 1 || !strings.HasPrefix(got[0].ContextMap()["version"].(string), "3.") {
			t.Fatalf("version lines %v, want one with the server's 3.x version", got)
		}
	})
}

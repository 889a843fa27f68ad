package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/cmd/scheduler/internal/redact"
)

const adminToken = "0123456789abcdef0123456789abcdef"

// writeTokenFile writes content into a file of mode perm and returns its path.
func writeTokenFile(tb testing.TB, content string, perm os.FileMode) string {
	tb.Helper()
	path := configtest.WriteFile(tb, "admin-token", content)
	if err := os.Chmod(path, perm); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestLoad_AdminTokenFile(t *testing.T) {
	t.Run("ReadAndScrubbed", func(t *testing.T) {
		path := writeTokenFile(t, adminToken+"\n", 0o600)
		cfg, err := Load(configtest.Write(t, "http:\n  admin_token_file: "+path+"\n"+configtest.MinimalJob), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.HTTP.AdminToken; got != adminToken {
			t.Fatalf("admin token=%q, want %q (the trailing newline trimmed)", got, adminToken)
		}
		scrub := redact.Scrubber(cfg.Secrets())
		if scrub == nil || strings.Contains(scrub("token "+adminToken), adminToken) {
			t.Fatal("the admin token is not scrubbed from run output")
		}
	})
	t.Run("FromEnvironment", func(t *testing.T) {
		path := writeTokenFile(t, adminToken, 0o400)
		cfg, err := Load(configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_HTTP_ADMIN_TOKEN_FILE=" + path})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HTTP.AdminToken != adminToken {
			t.Fatalf("admin token=%q, want %q", cfg.HTTP.AdminToken, adminToken)
		}
	})
	t.Run("RelativeToTheConfigFile", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "token"), []byte(adminToken), 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "scheduler.yaml")
		if err := os.WriteFile(path, []byte("http: {admin_token_file: token}\n"+configtest.MinimalJob), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HTTP.AdminToken != adminToken {
			t.Fatalf("admin token=%q, want %q", cfg.HTTP.AdminToken, adminToken)
		}
	})
	t.Run("NoneIsReadOnly", func(t *testing.T) {
		cfg, err := Load(configtest.Write(t, configtest.MinimalJob), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HTTP.AdminToken != "" || cfg.HTTP.AdminTokenFile != "" {
			t.Fatalf("admin token=%q file=%q, want none", cfg.HTTP.AdminToken, cfg.HTTP.AdminTokenFile)
		}
	})

	t.Run("KernelStream", func(t *testing.T) {
		// /proc/kmsg is a regular file of mode 0400 to stat, whose reads wait for the kernel's
		// next message (`validate` waited on it for good, deaf to SIGTERM), or take the messages
		// the kernel holds for the system logger: it is refused before any read, whether it holds
		// messages now or not.
		f, err := os.Open("/proc/kmsg")
		if err != nil {
			t.Fatalf("this test needs /proc/kmsg readable, as root: %v", err)
		}
		f.Close()
		done := make(chan error, 1)
		go func() {
			_, err := Load(configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_HTTP_ADMIN_TOKEN_FILE=/proc/kmsg"})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "http.admin_token_file: set by SCHEDULER_HTTP_ADMIN_TOKEN_FILE: cannot read the admin token: /proc/kmsg is a kernel file on procfs, not a file on disk") {
				t.Fatalf("err=%v, want the kernel's file refused", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Load still waits on /proc/kmsg after 30s")
		}
	})

	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
		want []string // in the problem's message
	}{
		{"Missing", func(*testing.T) string { return filepath.Join(dir, "absent") }, []string{"absent", "no such file"}},
		{"Directory", func(*testing.T) string { return dir }, []string{dir, "not a regular file"}},
		{"Empty", func(t *testing.T) string { return writeTokenFile(t, "\n", 0o600) }, []string{"admin-token", "is empty"}},
		{"GroupReadable", func(t *testing.T) string { return writeTokenFile(t, adminToken, 0o640) }, []string{"admin-token", "mode 0640", "chmod 600"}},
		{"WorldReadable", func(t *testing.T) string { return writeTokenFile(t, adminToken, 0o644) }, []string{"mode 0644", "owner only"}},
		{"Short", func(t *testing.T) string { return writeTokenFile(t, "short", 0o600) }, []string{"5 bytes", "shorter than 16"}},
		{"TwoWords", func(t *testing.T) string { return writeTokenFile(t, "0123456789 abcdef0123", 0o600) }, []string{"one word"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path(t)
			_, err := Load(configtest.Write(t, "http:\n  admin_token_file: "+path+"\n"+configtest.MinimalJob), nil)
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("err=%v, want a configuration error", err)
			}
			found := false
			for _, p := range cerr.Problems {
				if p.Key != "http.admin_token_file" {
					continue
				}
				found = true
				for _, w := range tc.want {
					if !strings.Contains(p.Msg, w) {
						t.Errorf("problem %q lacks %q", p.Msg, w)
					}
				}
				if strings.Contains(p.Msg, adminToken) {
					t.Errorf("problem %q quotes the token", p.Msg)
				}
			}
			if !found {
				t.Fatalf("problems %v, want one at http.admin_token_file", cerr.Problems)
			}
		})
	}
}

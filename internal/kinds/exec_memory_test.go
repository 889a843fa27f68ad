package kinds

import (
	"testing"
	"unsafe"
)

// TestNewExec_SharesTheDaemonsVariables: the variables a job inherits from the daemon are the
// daemon's strings, not copies built per job, so a table of many exec jobs does not hold the
// daemon's environment once per job. A job's own variables are its own.
func TestNewExec_SharesTheDaemonsVariables(t *testing.T) {
	environ := []string{"HOME=/home/sched", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"}
	a := mustExec(t, ExecConfig{Command: []string{"/bin/true"}, Environ: environ})
	b := mustExec(t, ExecConfig{Command: []string{"/bin/true"}, Environ: environ, Env: map[string]string{"HOME": "/srv/job"}})
	if len(a.env) != len(environ) {
		t.Fatalf("env=%q, want %q", a.env, environ)
	}
	for i, kv := range environ {
		if a.env[i] != kv || unsafe.StringData(a.env[i]) != unsafe.StringData(kv) {
			t.Fatalf("env[%d]=%q is a copy of the daemon's %q, want the daemon's string", i, a.env[i], kv)
		}
	}
	if want := []string{"HOME=/srv/job", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"}; len(b.env) != 3 || b.env[0] != want[0] || b.env[1] != want[1] || b.env[2] != want[2] {
		t.Fatalf("env=%q, want %q", b.env, want)
	}
	if unsafe.StringData(b.env[2]) != unsafe.StringData(environ[2]) {
		t.Fatal("PATH is a copy of the daemon's beside a job's own HOME")
	}
	if a.path != "/usr/bin:/bin" || b.path != "/usr/bin:/bin" {
		t.Fatalf("path=%q and %q, want /usr/bin:/bin", a.path, b.path)
	}
}

package settle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWait_Settled: a file left alone settles after one quiet period, with its stamp.
func TestWait_Settled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(p, []byte("jobs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Wait(context.Background(), p, 20*time.Millisecond, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Of(p); got != want {
		t.Fatalf("stamp %+v, want %+v", got, want)
	}
}

// TestWait_StillWritten: a file appended to without a pause longer than the quiet period does not
// settle: Wait gives up with ErrChanging.
func TestWait_StillWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "scheduler.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				_, _ = f.WriteString("x")
			}
		}
	}()
	_, err = Wait(context.Background(), p, 100*time.Millisecond, 500*time.Millisecond)
	close(stop)
	<-done
	if !errors.Is(err, ErrChanging) {
		t.Fatalf("Wait = %v, want ErrChanging", err)
	}
}

// TestWait_Replaced: a file replaced by another of the same size between two reads of its stamp
// has another stamp (its inode).
func TestWait_Replaced(t *testing.T) {
	dir := t.TempDir()
	p, q := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	for _, f := range []string{p, q} {
		if err := os.WriteFile(f, []byte("jobs: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before, err := Of(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(q, p); err != nil {
		t.Fatal(err)
	}
	if after, _ := Of(p); after == before {
		t.Fatal("a replaced file kept its stamp")
	}
}

// TestWait_Missing: a file that does not exist is an error, not a wait.
func TestWait_Missing(t *testing.T) {
	if _, err := Wait(context.Background(), filepath.Join(t.TempDir(), "none.yaml"), time.Millisecond, time.Second); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Wait = %v, want not exist", err)
	}
}

// TestLoad: what a load of a settled file returns is kept; a file that changes while it is read
// is refused, and so is a load's own failure.
func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(p, []byte("jobs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() (string, error) { b, err := os.ReadFile(p); return string(b), err }
	if got, err := Load(context.Background(), p, 10*time.Millisecond, time.Second, read); err != nil || got != "jobs: []\n" {
		t.Fatalf("Load = %q, %v", got, err)
	}
	changing := func() (string, error) {
		s, err := read()
		_ = os.WriteFile(p, []byte("jobs: [{name: a}]\n"), 0o600) // written as it is read
		return s, err
	}
	if _, err := Load(context.Background(), p, 10*time.Millisecond, time.Second, changing); !errors.Is(err, ErrChanging) {
		t.Fatalf("Load of a file written while read = %v, want ErrChanging", err)
	}
	bad := errors.New("invalid")
	if _, err := Load(context.Background(), p, 10*time.Millisecond, time.Second, func() (string, error) { return "", bad }); !errors.Is(err, bad) {
		t.Fatalf("Load = %v, want the load's error", err)
	}
}

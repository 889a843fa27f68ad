// Package settle tells a file that is still being written from one that is done: a
// configuration reloaded on SIGHUP while an editor or a deployment tool writes it in place is
// valid YAML at many points of its writing (cut after a job, or inside a number), and loading it
// then would replace the table with a part of it.
package settle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Stamp is what changes when a file is written or replaced: its inode, size and modification
// time.
type Stamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

// Of reads the stamp of the file at path.
func Of(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	s := Stamp{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s, nil
}

// ErrChanging is the answer of Wait for a file that kept changing.
var ErrChanging = errors.New("the file is still being written")

// Load calls load once the file at path has settled (Wait), and refuses what it loaded when the
// file changed while it was read: a file written in place is valid at many points of its
// writing, cut after an entry or inside a number.
func Load[T any](ctx context.Context, path string, quiet, max time.Duration, load func() (T, error)) (T, error) {
	var zero T
	stamp, err := Wait(ctx, path, quiet, max)
	if err != nil {
		return zero, err
	}
	v, err := load()
	if err != nil {
		return zero, err
	}
	if now, err := Of(path); err != nil || now != stamp {
		return zero, fmt.Errorf("%s: %w (it changed while it was read): signal again once it is written, or write it aside and rename it", path, ErrChanging)
	}
	return v, nil
}

// Wait returns the stamp of the file at path once it has not changed for quiet, nor been
// modified within quiet of now; it gives up with ErrChanging after max, or with ctx. A file
// replaced at once (written aside, then renamed) settles after one quiet period.
func Wait(ctx context.Context, path string, quiet, max time.Duration) (Stamp, error) {
	deadline := time.Now().Add(max)
	prev, err := Of(path)
	if err != nil {
		return Stamp{}, err
	}
	for {
		t := time.NewTimer(quiet)
		select {
		case <-ctx.Done():
			t.Stop()
			return Stamp{}, context.Cause(ctx)
		case <-t.C:
		}
		cur, err := Of(path)
		if err != nil {
			return Stamp{}, err
		}
		// A modification time ahead of the clock (copied from another host) says nothing.
		if age := time.Since(cur.mtime); cur == prev && (age >= quiet || age < 0) {
			return cur, nil
		}
		if time.Now().After(deadline) {
			return Stamp{}, fmt.Errorf("%s: %w (it changed within the last %s, for %s)", path, ErrChanging, quiet, max)
		}
		prev = cur
	}
}

package kinds

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// terminate ends process group pgid: SIGTERM, then SIGKILL once the grace has passed unless the
// leader and every other member have ended, then a wait of at most killWait for the killed to go.
// exited delivers the leader's Wait result; nil means the leader has been waited for already. It
// returns the leader's Wait result.
func (j *ExecJob) terminate(pgid int, exited <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.NewTimer(j.grace)
	defer grace.Stop()
	var waitErr error
	leaderDone := exited == nil
	if !leaderDone {
		select {
		case waitErr = <-exited:
			leaderDone = true
		case <-grace.C:
		}
	}
	if leaderDone && waitGroupGone(pgid, grace.C) {
		return waitErr
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if !leaderDone {
		waitErr = <-exited
	}
	// SIGKILL takes effect when each process next runs; only one stuck in an uninterruptible
	// wait (a hung network file system) outlasts killWait, and then nothing more can be done.
	killed := time.NewTimer(killWait)
	defer killed.Stop()
	waitGroupGone(pgid, killed.C)
	return waitErr
}

// waitGroupGone polls until no live process is left in group pgid (true) or deadline fires
// (false). The members are not children of this process, so they cannot be waited for.
func waitGroupGone(pgid int, deadline <-chan time.Time) bool {
	interval := 5 * time.Millisecond
	for groupAlive(pgid) {
		poll := time.NewTimer(interval)
		select {
		case <-deadline:
			poll.Stop()
			return false
		case <-poll.C:
		}
		interval = min(2*interval, 100*time.Millisecond)
	}
	return true
}

// firstForOOM makes process pid, a job just started, the kernel's first choice when memory runs
// out (oom_score_adj 1000, which the processes it starts inherit): a job that exhausts the memory
// the daemon shares with it is killed before the daemon that keeps the cluster's schedule. Best
// effort: a process the job forked before the write keeps the daemon's score.
func firstForOOM(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("1000"), 0)
}

// groupAlive reports whether process group pgid has a member that has not exited. kill(-pgid, 0)
// also succeeds for zombies, which linger where nothing reaps orphans, so on a "yes" the members
// are looked up in /proc where it exists.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	live, known := liveMembers(pgid)
	return live || !known
}

// liveMembers scans /proc for a process of group pgid in a state other than zombie or dead.
// known is false when /proc cannot be read.
func liveMembers(pgid int) (live, known bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, false
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything, so split after its last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true, true
		}
	}
	return false, true
}

// jobGroups are the process groups of the exec jobs this process runs: the daemon's, whatever
// job and term started them, since a second signal must stop them all (KillJobGroups).
var jobGroups = struct {
	sync.Mutex
	m map[int]struct{}
}{m: map[int]struct{}{}}

// trackGroup records pgid as a job's process group until the returned function is called, once
// the group is gone or left behind.
func trackGroup(pgid int) (untrack func()) {
	jobGroups.Lock()
	jobGroups.m[pgid] = struct{}{}
	jobGroups.Unlock()
	return func() {
		jobGroups.Lock()
		delete(jobGroups.m, pgid)
		jobGroups.Unlock()
	}
}

// KillJobGroups kills (SIGKILL) the process group of every exec job running in this process,
// its leader gone or not, and returns how many it signalled. A daemon that must exit at once (a
// second SIGTERM) calls it first, so that no job goes on running beside the run of its slot
// that the next leader starts.
func KillJobGroups() int {
	jobGroups.Lock()
	defer jobGroups.Unlock()
	n := 0
	for pgid := range jobGroups.m {
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

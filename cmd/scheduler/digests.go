package main

import (
	"sync"

	"scheduler/cmd/scheduler/internal/config"
)

// jobDigests keeps the digests of the daemon's table that /status and /table show, computed once
// per table rather than per request: at the largest table, they would take a request a
// noticeable part of a second.
type jobDigests struct {
	mu     sync.Mutex
	hash   string            // the table hash of the table digest holds
	digest map[string]string // by job name
}

// of returns the digest of each job of js, whose table hash is hash, by job name.
func (c *jobDigests) of(js []config.Job, hash string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.digest == nil || c.hash != hash {
		c.digest = make(map[string]string, len(js))
		for _, j := range js {
			c.digest[j.Name] = config.JobDigest(j)
		}
		c.hash = hash
	}
	return c.digest
}

package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PauseInfo says who paused a job and when. Both are informative: a job is
// paused while its key exists, and a key written by hand with another
// value leaves them empty.
type PauseInfo struct {
	// By is who paused the job: a user or node name, as the caller gave it.
	By string `json:"by"`
	// At is when, by the pausing process's clock.
	At time.Time `json:"at"`
}

// Pause pauses job cluster-wide: from the moment the leader's Watcher sees
// it, the job's slots are recorded skipped instead of run. paused is false
// when the job was paused already; its first record is kept then.
func (s *Store) Pause(ctx context.Context, job, by string) (paused bool, err error) {
	if err := checkJob(job); err != nil {
		return false, fmt.Errorf("pause: %w", err)
	}
	b, err := json.Marshal(PauseInfo{By: by, At: s.now().UTC().Truncate(time.Second)})
	if err != nil {
		return false, fmt.Errorf("pause %q: encode: %w", job, err)
	}
	key := s.k.paused(job)
	resp, err := s.cli.Txn(rctx(ctx)).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(b))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("pause %q: %w", job, err)
	}
	return resp.Succeeded, nil
}

// Resume lets job fire again. resumed is false when it was not paused,
// which is not an error.
func (s *Store) Resume(ctx context.Context, job string) (resumed bool, err error) {
	if err := checkJob(job); err != nil {
		return false, fmt.Errorf("resume: %w", err)
	}
	resp, err := s.cli.Delete(rctx(ctx), s.k.paused(job))
	if err != nil {
		return false, fmt.Errorf("resume %q: %w", job, err)
	}
	return resp.Deleted > 0, nil
}

// Paused returns the paused jobs by name.
func (s *Store) Paused(ctx context.Context) (map[string]PauseInfo, error) {
	kvs, err := s.list(ctx, "paused jobs", s.k.pausedPrefix())
	if err != nil {
		return nil, err
	}
	m := make(map[string]PauseInfo, len(kvs))
	for _, kv := range kvs {
		job, info := s.decodePause(kv.Key, kv.Value)
		m[job] = info
	}
	return m, nil
}

// decodePause returns the job a paused key names and its record; a value
// that does not parse gives an empty record.
func (s *Store) decodePause(key, value []byte) (string, PauseInfo) {
	job := strings.TrimPrefix(string(key), s.k.pausedPrefix())
	var info PauseInfo
	if json.Unmarshal(value, &info) != nil {
		info = PauseInfo{}
	}
	info.By = clipField(info.By)
	return job, info
}

// clipField keeps a field of a record written by hand within what a replica writes of its own
// (maxReplicaField), its control characters dropped: the console and status show it on every
// refresh.
func clipField(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) <= maxReplicaField {
		return s
	}
	cut := maxReplicaField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

package control

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors for input that cannot name a key. Wrapped with the offending
// value; test with errors.Is.
var (
	// ErrInvalidPrefix: the election prefix does not start with "/" or
	// ends with "/".
	ErrInvalidPrefix = errors.New("control: invalid election prefix")
	// ErrInvalidJob: a job name is empty or not made of [a-z0-9_-].
	ErrInvalidJob = errors.New("control: invalid job name")
	// ErrInvalidNode: a node name is empty or holds "/", a space or a
	// control character.
	ErrInvalidNode = errors.New("control: invalid node name")
)

// triggerLayout formats a request time in UTC with a fixed width, so that
// the keys of one job sort by time, and with microseconds, the precision
// of the run ledger.
const triggerLayout = "2006-01-02T15:04:05.000000Z"

// keys derives every key of this package from the election prefix.
type keys struct {
	prefix string
}

func (k keys) pausedPrefix() string       { return k.prefix + ":paused/" }
func (k keys) paused(job string) string   { return k.pausedPrefix() + job }
func (k keys) triggerPrefix() string      { return k.prefix + ":trigger/" }
func (k keys) replicaPrefix() string      { return k.prefix + ":replica/" }
func (k keys) replica(node string) string { return k.replicaPrefix() + node }

// trigger returns the request key of job at, which must be UTC and
// truncated to microseconds.
func (k keys) trigger(job string, at time.Time) string {
	return k.triggerPrefix() + job + "/" + at.Format(triggerLayout)
}

// election returns the range of the election's candidate keys.
func (k keys) election() string { return k.prefix + "/" }

// electionKey returns the candidate key concurrency.Election writes for a
// session on lease: the range, then the lease ID in hex.
func (k keys) electionKey(lease int64) string {
	return fmt.Sprintf("%s%x", k.election(), lease)
}

// parseTrigger splits a request key into its job and time.
func (k keys) parseTrigger(key string) (job string, at time.Time, err error) {
	rest, ok := strings.CutPrefix(key, k.triggerPrefix())
	if !ok {
		return "", time.Time{}, fmt.Errorf("request key %q: not under %s", shownKey(key), k.triggerPrefix())
	}
	job, id, ok := strings.Cut(rest, "/")
	if !ok {
		return "", time.Time{}, fmt.Errorf("request key %q: no request time", shownKey(key))
	}
	if err := checkJob(job); err != nil {
		return "", time.Time{}, fmt.Errorf("request key %q: %w", shownKey(key), err)
	}
	at, err = time.Parse(triggerLayout, id)
	if err != nil || at.Format(triggerLayout) != id {
		return "", time.Time{}, fmt.Errorf("request key %q: time %q is not in the form %s", shownKey(key), shownKey(id), triggerLayout)
	}
	if err := checkRequestTime(at); err != nil {
		return "", time.Time{}, fmt.Errorf("request key %q: %w", shownKey(key), err)
	}
	return job, at, nil
}

// checkRequestTime refuses a request time the run ledger would refuse as a slot (the zero
// time) or cannot keep on every backend: such a request would be retried by the leader for
// as long as it leads.
func checkRequestTime(at time.Time) error {
	if at.IsZero() || at.Year() < 1 || at.Year() > 9999 {
		return fmt.Errorf("request time %s out of range: want a time after %s and in a year up to 9999",
			at.UTC().Format(triggerLayout), time.Time{}.Format(triggerLayout))
	}
	return nil
}

// checkPrefix validates an election prefix.
func checkPrefix(prefix string) error {
	switch {
	case !strings.HasPrefix(prefix, "/"):
		return fmt.Errorf("%w %q: must start with /", ErrInvalidPrefix, prefix)
	case strings.HasSuffix(prefix, "/"):
		return fmt.Errorf("%w %q: must not end with /", ErrInvalidPrefix, prefix)
	}
	return nil
}

// MaxJobName is the longest job name, in bytes. A name is a key of the store's indexes, whose
// entries Postgres bounds (a little over 2,700 bytes): one longer name made every raise of the
// fences fail, and with it every term, for all jobs.
const MaxJobName = 128

// checkJob validates a job name the way the configuration does.
func checkJob(job string) error {
	switch {
	case job == "":
		return fmt.Errorf("%w: empty", ErrInvalidJob)
	case len(job) > MaxJobName:
		return fmt.Errorf("%w %q: %d bytes long, more than the limit of %d", ErrInvalidJob, shownKey(job), len(job), MaxJobName)
	case strings.Contains(job, "/"):
		return fmt.Errorf("%w %q: must not contain /", ErrInvalidJob, shownKey(job))
	}
	for _, c := range job {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w %q: must match [a-z0-9_-]+", ErrInvalidJob, shownKey(job))
		}
	}
	return nil
}

// MaxNodeName is the longest node name, in bytes: a DNS name's. A name is a key of the store's
// registry, which Postgres indexes with a bound of its own.
const MaxNodeName = 253

// checkNode validates a replica's node name, which defaults to the host
// name and is therefore checked only for what would break a key or a log
// line.
func checkNode(node string) error {
	if node == "" {
		return fmt.Errorf("%w: empty", ErrInvalidNode)
	}
	if msg := NodeProblem(node); msg != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidNode, shownKey(node), msg)
	}
	return nil
}

// NodeProblem says what unfits a non-empty node name for a replica's keys, or "" when nothing
// does: the one rule, which the configuration applies too, so that a name `validate` takes is
// never refused by a running daemon's registration, again and again.
func NodeProblem(node string) string {
	if len(node) > MaxNodeName {
		return fmt.Sprintf("%d bytes long, more than the limit of %d", len(node), MaxNodeName)
	}
	for _, c := range node {
		if c == '/' || c <= ' ' || c == 0x7f {
			return "must not contain /, spaces or control characters"
		}
	}
	return ""
}

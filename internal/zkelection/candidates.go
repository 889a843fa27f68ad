package zkelection

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// candidatePrefix starts the name of every candidate node; the client's
// protected create puts its own prefix before it, and the server appends
// the sequence number.
const candidatePrefix = "c-"

// sequence returns the sequence number a candidate node's name ends with,
// and whether the name is a candidate's at all.
func sequence(name string) (int64, bool) {
	i := strings.LastIndex(name, "-")
	if i < 0 || !strings.HasSuffix(name[:i+1], candidatePrefix) {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	return n, err == nil
}

// ordered returns the candidate names among children, lowest sequence
// number first; other names are left out.
func ordered(children []string) []string {
	var out []string
	for _, c := range children {
		if _, ok := sequence(c); ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := sequence(out[i])
		b, _ := sequence(out[j])
		return a < b
	})
	return out
}

// predecessor returns the candidate just before mine among children, "" when
// mine is the lowest, and whether mine is among them at all.
func predecessor(children []string, mine string) (string, bool) {
	cs := ordered(children)
	for i, c := range cs {
		if c == mine {
			if i == 0 {
				return "", true
			}
			return cs[i-1], true
		}
	}
	return "", false
}

// ErrNoLeader is returned by ReadLeader when there is no candidate.
var ErrNoLeader = errors.New("zkelection: no leader")

// Leader is who holds an election, as read from ZooKeeper.
type Leader struct {
	// Node is the data of the lowest candidate node: the leader's replica
	// name.
	Node string
	// Token is the czxid of that node, the leader's fencing token.
	Token int64
	// Created is when that node was created, by the server's clock. The
	// term may have started later, when the candidates before it left.
	Created time.Time
	// Path is that node's path.
	Path string
}

// ReadLeader reads who holds the election under parent on conn right now:
// the ephemeral candidate with the lowest sequence number. It returns
// ErrNoLeader when there is none, or the parent node does not exist.
func ReadLeader(conn *zk.Conn, parent string) (Leader, error) {
	e, err := ReadElection(conn, parent)
	if err == nil && !e.Leads {
		err = ErrNoLeader
	}
	return e.Leader, err
}

// Election is the election's parent node as one read saw it.
type Election struct {
	// Leader holds the election; zero when Leads is false.
	Leader Leader
	// Leads says whether a candidate holds the election.
	Leads bool
	// Persistent are the nodes named like candidates but not ephemeral,
	// ordered before the leader: no replica writes one (see Stray).
	Persistent []Stray
}

// Stray is a node under the election's parent that is named like a
// candidate but is persistent, written by someone else: no session owns
// it, so it would stand before every candidate behind it for ever. A
// campaigning replica whose predecessor it is removes it.
type Stray struct {
	Path string
	// Data is the node's data, cut to what a log line shows.
	Data    string
	Version int32
}

// ReadElection reads the candidates under parent, as ReadLeader does, and
// the persistent nodes before the leader. It fails only when the server
// does not answer; an election nobody holds has Leads false.
func ReadElection(conn *zk.Conn, parent string) (Election, error) {
	children, _, err := conn.Children(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return Election{}, nil
	}
	if err != nil {
		return Election{}, fmt.Errorf("list candidates under %s: %w", parent, err)
	}
	var e Election
	for _, c := range ordered(children) {
		p := path.Join(parent, c)
		data, stat, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // it left between the two reads
		}
		if err != nil {
			return Election{}, fmt.Errorf("read candidate %s: %w", p, err)
		}
		if stat.EphemeralOwner == 0 {
			e.Persistent = append(e.Persistent, Stray{Path: p, Data: shown(data), Version: stat.Version})
			continue
		}
		e.Leader, e.Leads = Leader{Node: string(data), Token: stat.Czxid, Created: time.UnixMilli(stat.Ctime), Path: p}, true
		return e, nil
	}
	return e, nil
}

// shownData is how much of a node's data a log line or a status page shows:
// someone else may have written it, and it may be large.
const shownData = 200

// shown cuts data to shownData bytes.
func shown(data []byte) string {
	if len(data) > shownData {
		return string(data[:shownData]) + "…"
	}
	return string(data)
}

// StrayProblem describes s for a status page or a readiness failure, with
// the command that removes it.
func StrayProblem(s Stray) string {
	return fmt.Sprintf("persistent node %s (data %q) under the election path: no replica writes one, and it stands before "+
		"every candidate behind it until it is removed (a campaigning replica removes it once it stands before its own "+
		"node); remove it now with: zkCli.sh delete %s", s.Path, s.Data, s.Path)
}

// ensurePath creates p and its ancestors as persistent nodes when missing.
// An existing p is not created again: an access list on an ancestor may
// refuse the creation of a node that exists.
func ensurePath(conn *zk.Conn, p string) error {
	if ok, _, err := conn.Exists(p); err == nil && ok {
		return nil
	}
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		_, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p[:i], err)
		}
	}
	return nil
}

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

// candidates returns the names of the candidate nodes among children; other names are left
// out.
func candidates(children []string) []string {
	var out []string
	for _, c := range children {
		if _, ok := sequence(c); ok {
			out = append(out, c)
		}
	}
	return out
}

// candidate is a candidate node and what the server says of it.
type candidate struct {
	name string
	stat *zk.Stat
}

// byCreation reads the candidate nodes among children under parent and orders them by the zxid
// of their creation, which the server assigns: the order of the election. Their names do not
// order them: a name is whoever created the node's choice (a node created by hand as
// c-0000000000 would stand before a sitting leader), and only the sequence numbers the server
// appends rise with time. Nodes gone between the reads are left out.
func byCreation(conn *zk.Conn, parent string, children []string) ([]candidate, error) {
	var out []candidate
	for _, c := range candidates(children) {
		p := path.Join(parent, c)
		exists, stat, err := conn.Exists(p)
		if err != nil {
			return nil, fmt.Errorf("read candidate %s: %w", p, err)
		}
		if exists {
			out = append(out, candidate{name: c, stat: stat})
		}
	}
	sort.Slice(out, func(i, j int) bool { // ties (nodes of one multi-op) by name, so that readers agree
		a, b := out[i], out[j]
		return a.stat.Czxid < b.stat.Czxid || a.stat.Czxid == b.stat.Czxid && a.name < b.name
	})
	return out, nil
}

// predecessor returns the candidate just before mine among cs, ordered by creation, "" when
// mine is the first, and whether mine is among them at all.
func predecessor(cs []candidate, mine string) (string, bool) {
	for i, c := range cs {
		if c.name == mine {
			if i == 0 {
				return "", true
			}
			return cs[i-1].name, true
		}
	}
	return "", false
}

// ErrNoLeader is returned by ReadLeader when there is no candidate.
var ErrNoLeader = errors.New("zkelection: no leader")

// Leader is who holds an election, as read from ZooKeeper.
type Leader struct {
	// Node is the data of the first candidate node: the leader's replica
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
// the ephemeral candidate created first (byCreation). It returns
// ErrNoLeader when there is none, or the parent node does not exist.
func ReadLeader(conn *zk.Conn, parent string) (Leader, error) {
	e, err := readCandidates(conn, parent)
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
	// Refused describes an access list on the parent node that refuses the
	// replicas, with its remedy; empty when it admits them.
	Refused string
}

// Problems describes what in e keeps the election from working, each with
// its remedy. The persistent nodes are not among them: no read takes one
// for the leader, and the replica one would stand before removes it.
func (e Election) Problems() []string {
	if e.Refused != "" {
		return []string{e.Refused}
	}
	return nil
}

// ReadElection reads the candidates under parent, as ReadLeader does, and
// the parent's access list. It fails only when the server does not answer,
// or refuses the reads; an election nobody holds has Leads false.
func ReadElection(conn *zk.Conn, parent string) (Election, error) {
	e, err := readCandidates(conn, parent)
	if err != nil {
		return Election{}, refused(parent, err)
	}
	if e.Refused, err = readAccess(conn, parent); err != nil {
		return Election{}, err
	}
	return e, nil
}

// readCandidates is ReadElection without the access list.
func readCandidates(conn *zk.Conn, parent string) (Election, error) {
	children, _, err := conn.Children(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return Election{}, nil
	}
	if err != nil {
		return Election{}, fmt.Errorf("list candidates under %s: %w", parent, err)
	}
	cs, err := byCreation(conn, parent, children)
	if err != nil {
		return Election{}, err
	}
	var e Election
	for _, c := range cs {
		p := path.Join(parent, c.name)
		data, stat, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // it left between the two reads
		}
		if err != nil {
			return Election{}, fmt.Errorf("read candidate %s: %w", p, err)
		}
		if stat.EphemeralOwner == 0 {
			continue // no session owns it: no replica wrote it (see Campaigner.removeStray)
		}
		e.Leader, e.Leads = Leader{Node: string(data), Token: stat.Czxid, Created: time.UnixMilli(stat.Ctime), Path: p}, true
		return e, nil
	}
	return e, nil
}

// candidatePerms are what a replica needs of the parent node: it lists,
// creates and deletes candidates, as world:anyone (it connects without
// authentication).
const candidatePerms = zk.PermRead | zk.PermCreate | zk.PermDelete

// readAccess reads the parent node's access list and describes it when it
// refuses the replicas, with its remedy. An entry of the ip scheme admits a
// client without authentication too, by its address, which this read cannot
// tell from the replicas': it is taken to admit them (the server checks each
// operation against any entry that matches, so the permissions add up), and a
// refusal it causes all the same shows where the campaign fails (refused).
func readAccess(conn *zk.Conn, parent string) (string, error) {
	acl, _, err := conn.GetACL(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the access list of %s: %w", parent, err)
	}
	var perms int32
	for _, a := range acl {
		if a.Scheme == "world" && a.ID == "anyone" || a.Scheme == "ip" {
			perms |= a.Perms
		}
	}
	if perms&candidatePerms == candidatePerms {
		return "", nil
	}
	return fmt.Sprintf("the access list of %s (%s) refuses the replicas, which connect without authentication and need "+
		"read, create and delete as world:anyone: no replica can become a candidate; restore it with: zkCli.sh setAcl %s world:anyone:cdrwa",
		parent, shownACL(acl), parent), nil
}

// shownACL is acl as zkCli.sh getAcl shows it, on one line.
func shownACL(acl []zk.ACL) string {
	out := make([]string, len(acl))
	for i, a := range acl {
		perms := ""
		for _, p := range []struct {
			bit  int32
			name string
		}{{zk.PermCreate, "c"}, {zk.PermDelete, "d"}, {zk.PermRead, "r"}, {zk.PermWrite, "w"}, {zk.PermAdmin, "a"}} {
			if a.Perms&p.bit != 0 {
				perms += p.name
			}
		}
		out[i] = a.Scheme + ":" + a.ID + ":" + perms
	}
	return strings.Join(out, ",")
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

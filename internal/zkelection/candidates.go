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
// the candidate with the lowest sequence number. It returns ErrNoLeader
// when there is none, or the parent node does not exist.
func ReadLeader(conn *zk.Conn, parent string) (Leader, error) {
	for {
		children, _, err := conn.Children(parent)
		if errors.Is(err, zk.ErrNoNode) {
			return Leader{}, ErrNoLeader
		}
		if err != nil {
			return Leader{}, fmt.Errorf("list candidates under %s: %w", parent, err)
		}
		cs := ordered(children)
		if len(cs) == 0 {
			return Leader{}, ErrNoLeader
		}
		p := path.Join(parent, cs[0])
		data, stat, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // it left between the two reads
		}
		if err != nil {
			return Leader{}, fmt.Errorf("read candidate %s: %w", p, err)
		}
		return Leader{Node: string(data), Token: stat.Czxid, Created: time.UnixMilli(stat.Ctime), Path: p}, nil
	}
}

// ensurePath creates p and its ancestors as persistent nodes when missing.
func ensurePath(conn *zk.Conn, p string) error {
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

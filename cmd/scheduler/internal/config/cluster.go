package config

import (
	"errors"
	"slices"
	"strings"
)

// clusterKeys are the top-level keys that find the cluster: a problem under another key (a job,
// defaults, http) does not stop the commands that work from the leader's table.
var clusterKeys = []string{"node", "data_dir", "single_node", "etcd", "election", "zookeeper", "redis", "store", "log"}

// Cluster is a configuration as the commands that work from the cluster's view read it.
type Cluster struct {
	// Config is the configuration as read; its Jobs are nil when Rest is set.
	Config *Config
	// Rest holds the problems under keys that do not find the cluster, or is nil.
	Rest *Error
}

// LoadCluster reads the file at path as Load does, but refuses it, with every problem, only
// when one lies in the whole file, a variable or a key of clusterKeys: a broken job in the local
// file must not keep status or pause from reaching a healthy cluster.
func LoadCluster(path string, environ []string) (*Cluster, error) {
	l, err := LoadTable(path, environ)
	var ce *Error
	if !errors.As(err, &ce) {
		if err != nil {
			return nil, err
		}
		return &Cluster{Config: l.Config}, nil
	}
	if slices.ContainsFunc(ce.Problems, func(p Problem) bool {
		top, _, _ := strings.Cut(strings.SplitN(p.Key, "[", 2)[0], ".")
		return top == "" || strings.HasPrefix(top, envPrefix+"_") || slices.Contains(clusterKeys, top)
	}) {
		return nil, ce
	}
	cfg, _ := checkConfig(path, environ) // the problems are ce's
	if cfg == nil {
		return nil, ce
	}
	cfg.Jobs = nil
	return &Cluster{Config: cfg, Rest: ce}, nil
}

package config

import (
	"net/http"
	"strings"
)

// clusterKeys are the top-level keys a command needs to reach the cluster: the coordinator, the
// store and the process's own name and logging. A problem anywhere else (the jobs, their
// defaults, the HTTP server) does not keep a command from reading the cluster's own table.
var clusterKeys = map[string]bool{
	"node": true, "data_dir": true, "single_node": true, "etcd": true, "election": true,
	"zookeeper": true, "redis": true, "store": true, "log": true,
}

// Cluster is the part of a configuration file a command needs to find the cluster, and what the
// file says about the table.
type Cluster struct {
	// Config is the configuration as read. Its Jobs are the file's table when Rest is nil, and
	// nil otherwise: a table with problems is no table to judge a job by.
	Config *Config
	// Rest lists the problems of the keys a command does not need (the jobs, defaults, http...),
	// nil when there are none.
	Rest *Error
}

// LoadCluster reads the file at path as Load does, but refuses it only for a problem in what
// finds the cluster: the whole file, node, data_dir, single_node, etcd, election, zookeeper,
// redis, store or log. The status and control commands work from the leader's table, so a
// broken job in the local file must not keep them from reaching a healthy cluster; the other
// problems come back in Rest.
func LoadCluster(path string, environ []string) (*Cluster, error) {
	cfg, problems := checkConfig(path, environ)
	if cfg != nil {
		_, built := buildTable(cfg, &http.Client{}, environ)
		problems = append(problems, uncovered(problems, built)...)
	}
	if len(problems) == 0 {
		return &Cluster{Config: cfg}, nil
	}
	env := false
	if cfg != nil {
		problems, env = blameVariables(problems, cfg.fromEnv)
	}
	var need, rest []Problem
	for _, p := range problems {
		if cfg == nil || needed(p.Key) {
			need = append(need, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(need) > 0 {
		return nil, &Error{File: path, Problems: need, Env: env}
	}
	cfg.Jobs = nil
	return &Cluster{Config: cfg, Rest: &Error{File: path, Problems: rest, Env: env}}, nil
}

// needed reports whether a problem at key keeps a command from finding the cluster: one of the
// whole file or a variable, or one under a key of clusterKeys.
func needed(key string) bool {
	if key == "" || strings.HasPrefix(key, envPrefix+"_") {
		return true
	}
	top, _, _ := strings.Cut(key, ".")
	top, _, _ = strings.Cut(top, "[")
	return clusterKeys[top]
}

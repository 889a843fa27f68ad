// Command etcdmember runs one embedded etcd member in its own process, so that the end-to-end
// suite can kill, freeze and restart the members of a cluster independently, as it would real
// etcd servers. It listens where its flags say (the suite passes loopback addresses only), logs
// warnings and errors to stderr, and stops on SIGTERM or SIGINT; SIGKILL is a crash.
//
// Once its data directory holds a write-ahead log, the -initial-* flags are ignored, so the same
// command line restarts a killed member.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "etcdmember:", err)
		os.Exit(1)
	}
}

// run parses the flags, starts the member, and serves until ctx ends or the server fails.
func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("etcdmember", flag.ContinueOnError)
	name := fs.String("name", "", "member name, unique in the cluster")
	dir := fs.String("data-dir", "", "data directory")
	client := fs.String("listen-client", "", "client URL, e.g. http://127.0.0.1:2379 (also advertised)")
	peer := fs.String("listen-peer", "", "peer URL, e.g. http://127.0.0.1:2380 (also advertised)")
	cluster := fs.String("initial-cluster", "", "name=peerURL,... of every member")
	token := fs.String("initial-cluster-token", "e2e", "cluster token")
	tick := fs.Uint("tick-ms", 100, "heartbeat interval in milliseconds")
	election := fs.Uint("election-ms", 1000, "election timeout in milliseconds")
	level := fs.String("log-level", "warn", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config(*name, *dir, *client, *peer, *cluster, *token, *tick, *election, *level)
	if err != nil {
		return err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start member %s: %w", *name, err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcdmember: %s ready on %s\n", *name, *client)
	case err := <-e.Err():
		return fmt.Errorf("member %s: %w", *name, err)
	case <-ctx.Done():
		e.Server.HardStop()
		return nil
	}
	select {
	case err := <-e.Err():
		return fmt.Errorf("member %s: %w", *name, err)
	case <-ctx.Done():
		// A graceful stop hands raft leadership over first; bound it like etcd's own stop.
		done := make(chan struct{})
		go func() { e.Server.Stop(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			e.Server.HardStop()
		}
		return nil
	}
}

// config builds the member's embed.Config from its flags.
func config(name, dir, client, peer, cluster, token string, tick, election uint, level string) (*embed.Config, error) {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("-name: required"))
	}
	if dir == "" {
		errs = append(errs, errors.New("-data-dir: required"))
	}
	if cluster == "" {
		errs = append(errs, errors.New("-initial-cluster: required"))
	}
	cu, err := url.Parse(client)
	if err != nil || cu.Host == "" {
		errs = append(errs, fmt.Errorf("-listen-client %q: want a URL such as http://127.0.0.1:2379", client))
	}
	pu, err := url.Parse(peer)
	if err != nil || pu.Host == "" {
		errs = append(errs, fmt.Errorf("-listen-peer %q: want a URL such as http://127.0.0.1:2380", peer))
	}
	if tick == 0 || election < 5*tick {
		errs = append(errs, fmt.Errorf("-tick-ms %d, -election-ms %d: want a tick above 0 and an election timeout of at least 5 ticks", tick, election))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.TickMs = tick
	cfg.ElectionMs = election
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cluster
	cfg.InitialClusterToken = token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.Logger = "zap"
	cfg.LogLevel = level
	cfg.LogOutputs = []string{"stderr"}
	return cfg, nil
}

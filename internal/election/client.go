package election

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ClientConfig is how to reach the etcd cluster.
type ClientConfig struct {
	// Endpoints are the members' client URLs ("https://host:2379") or
	// host:port pairs. Must not be empty.
	Endpoints []string
	// DialTimeout bounds fetching an auth token; 0 means 5 s. Since client
	// 3.7 the client is created without waiting for a connection, so an
	// unreachable cluster shows up on the first request, not here.
	DialTimeout time.Duration
	// Username and Password enable etcd authentication when Username is
	// set.
	Username string
	Password string
	// CAFile verifies the servers' certificates; CertFile and KeyFile (both
	// or neither) are the client certificate. Any of them enables TLS.
	CAFile   string
	CertFile string
	KeyFile  string
}

const (
	// defaultDialTimeout is used when ClientConfig.DialTimeout is zero.
	defaultDialTimeout = 5 * time.Second
	// keepAliveTime is how long a connection may be idle before the client
	// pings the server. Without pings a blackholed connection is never
	// declared dead and requests on it hang; below the server's minimum
	// (5 s, GRPCKeepAliveMinTime) the server would close the connection
	// for pinging too often.
	keepAliveTime = 5 * time.Second
	// keepAliveTimeout is how long a ping may go unanswered before the
	// connection is closed and redialled.
	keepAliveTimeout = 2 * time.Second
)

// NewClient returns an etcd client for cfg, with gRPC keep-alive on and
// without rejecting servers older than the client (etcd 3.4 and 3.5 speak
// the same protocol for everything this package uses). Close it when done.
func NewClient(cfg ClientConfig, lg *zap.Logger) (*clientv3.Client, error) {
	if lg == nil {
		return nil, errors.New("election: nil logger")
	}
	ecfg, err := cfg.etcdConfig(lg)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	return cli, nil
}

// etcdConfig translates cfg into the etcd client's configuration.
func (cfg ClientConfig) etcdConfig(lg *zap.Logger) (clientv3.Config, error) {
	var errs []error
	if len(cfg.Endpoints) == 0 {
		errs = append(errs, errors.New("endpoints: empty"))
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file must be set together"))
	}
	if cfg.Username == "" && cfg.Password != "" {
		errs = append(errs, errors.New("password: set without username"))
	}
	useTLS := cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != ""
	for _, ep := range cfg.Endpoints {
		// The client decides on TLS by the scheme: with http:// it would
		// silently connect in plain text although TLS is configured.
		if useTLS && strings.HasPrefix(ep, "http://") {
			errs = append(errs, fmt.Errorf("endpoint %q: http:// with tls configured; use https:// or host:port", ep))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return clientv3.Config{}, fmt.Errorf("etcd client config: %w", err)
	}
	dial := cfg.DialTimeout
	if dial == 0 {
		dial = defaultDialTimeout
	}
	ecfg := clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          dial,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		Username:             cfg.Username,
		Password:             cfg.Password,
		RejectOldCluster:     false,
		Logger:               lg.Named("etcd-client"),
	}
	if useTLS {
		info := transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, TrustedCAFile: cfg.CAFile}
		tc, err := info.ClientConfig()
		if err != nil {
			return clientv3.Config{}, fmt.Errorf("etcd client tls (ca %q, cert %q, key %q): %w", cfg.CAFile, cfg.CertFile, cfg.KeyFile, err)
		}
		ecfg.TLS = tc
	}
	return ecfg, nil
}

package election

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Embedded is a single-member etcd server running inside this process, for
// development: with one member there is nobody to take over when the
// process dies, so leadership is trivially held and nothing is highly
// available.
type Embedded struct {
	etcd      *embed.Etcd
	endpoints []string
	file      string
	level     zap.AtomicLevel // of etcd's own logs; raised on Close, whose teardown errors are noise
}

const (
	// embeddedDir is the etcd data directory inside the data directory.
	embeddedDir = "etcd"
	// embeddedEndpointFile records the client URL of a running embedded
	// server inside the data directory, for other processes using the same
	// data directory (e.g. a status command).
	embeddedEndpointFile = "etcd.endpoint"
	// embeddedSocket is the unix socket the embedded server serves its
	// clients on, inside the data directory.
	embeddedSocket = "etcd.sock"
	// socketPathMax is the longest unix socket path Linux takes (sun_path
	// less its terminating NUL).
	socketPathMax = 107
)

// StartEmbedded starts a single-member etcd with its data in dir/etcd,
// serving its clients on the unix socket dir/etcd.sock (mode 0600), and
// waits until it serves clients or ctx is done. It records the client URL in
// dir/etcd.endpoint (see EmbeddedEndpoints). etcd logs at warning level and
// above through lg.
//
// The embedded etcd has no authentication: on a loopback port every local
// user, and every exec job whatever its user, could pause, trigger or hold
// the election. The socket is reached only by those who may enter dir, as
// the SQLite store beside it. A dir too long for a socket path falls back
// to a random loopback port, with a warning that says so. The peer port,
// which a single member never dials and which serves no keys, stays on
// loopback.
func StartEmbedded(ctx context.Context, dir string, lg *zap.Logger) (*Embedded, error) {
	if lg == nil {
		return nil, errors.New("election: nil logger")
	}
	lg = lg.Named("etcd")
	cfg := embed.NewConfig()
	cfg.Name = "scheduler"
	cfg.Dir = filepath.Join(dir, embeddedDir)
	level := zap.NewAtomicLevelAt(zapcore.WarnLevel)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.WithOptions(zap.IncreaseLevel(level)))
	// Port 0 works for a single member: no peer needs to know the address
	// up front. The data directory keeps the member's identity, so a
	// restart on other ports is still the same one-member cluster.
	local := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	client, private, err := embeddedClientURL(dir)
	if err != nil {
		return nil, err
	}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{local}
	cfg.AdvertisePeerUrls = []url.URL{local}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Compact history older than an hour, so a long development run does
	// not fill the backend with revisions nobody reads.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, ctx.Err())
	}
	ep := "http://" + e.Clients[0].Addr().String()
	if private {
		// Before the endpoint is published: the socket's mode comes from the
		// umask, and a data directory made beforehand may be open to others.
		if err := os.Chmod(client.Path, 0o600); err != nil {
			e.Close()
			return nil, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, err)
		}
		ep = "unix://" + client.Path
	} else {
		lg.Warn("embedded etcd: data directory path too long for a unix socket; every local user can reach the embedded etcd on its loopback port",
			zap.String("dir", dir), zap.Int("max_socket_path", socketPathMax))
	}
	emb := &Embedded{etcd: e, endpoints: []string{ep}, file: filepath.Join(dir, embeddedEndpointFile), level: level}
	if err := writeFileAtomic(emb.file, ep+"\n"); err != nil {
		e.Close()
		return nil, err
	}
	lg.Warn("embedded etcd: development only, not highly available", zap.String("endpoint", ep), zap.String("dir", cfg.Dir))
	return emb, nil
}

// embeddedClientURL is where the embedded server in dir serves clients: its
// socket (private), or a random loopback port when the socket's path would be
// too long.
func embeddedClientURL(dir string) (u url.URL, private bool, err error) {
	sock, err := filepath.Abs(filepath.Join(dir, embeddedSocket))
	if err != nil {
		return url.URL{}, false, fmt.Errorf("embedded etcd socket in %s: %w", dir, err)
	}
	if len(sock) > socketPathMax {
		return url.URL{Scheme: "http", Host: "127.0.0.1:0"}, false, nil
	}
	return url.URL{Scheme: "unix", Path: sock}, true, nil
}

// Endpoints returns the client URLs of the embedded server.
func (e *Embedded) Endpoints() []string {
	return append([]string(nil), e.endpoints...)
}

// Close stops the server and removes the endpoint record. The server waits
// for open client streams to end, up to several seconds, so close the
// clients first.
func (e *Embedded) Close() {
	_ = os.Remove(e.file)
	// Closing makes etcd log every listener it shuts as a failure to serve.
	e.level.SetLevel(zapcore.FatalLevel)
	e.etcd.Close()
}

// EmbeddedEndpoints returns the client URLs that an embedded server using
// data directory dir recorded when it started, so that another process
// with the same configuration can reach it. The record may be stale if
// that server crashed.
func EmbeddedEndpoints(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, embeddedEndpointFile))
	if err != nil {
		return nil, fmt.Errorf("embedded etcd endpoint in %s: %w", dir, err)
	}
	ep := strings.TrimSpace(string(b))
	if ep == "" {
		return nil, fmt.Errorf("embedded etcd endpoint in %s: empty record", dir)
	}
	return []string{ep}, nil
}

// writeFileAtomic writes data to name through a temporary file and a
// rename, so that readers never see half a record.
func writeFileAtomic(name, data string) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

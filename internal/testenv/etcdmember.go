package testenv

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdMember is one member's identity. The URLs stay fixed once the member
// first started, so Restart reuses them.
type etcdMember struct {
	name    string
	dir     string
	client  url.URL
	peer    url.URL
	cluster string // initial cluster, "name=peerURL,..."
	server  *embed.Etcd
	closed  chan struct{} // closed once the last halted server is fully closed
	log     *logTail      // the member's recent warnings and errors
}

// logTail keeps the last few kilobytes written to it, so a start failure can
// show what the server complained about without logging every test's etcd
// output.
type logTail struct {
	mu sync.Mutex
	b  []byte
}

const logTailSize = 4 << 10

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if len(l.b) > logTailSize {
		l.b = append(l.b[:0], l.b[len(l.b)-logTailSize:]...)
	}
	return len(p), nil
}

func (l *logTail) Sync() error { return nil }

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// logger returns a logger that keeps the member's warnings and errors in
// m.log.
func (m *etcdMember) logger() *zap.Logger {
	if m.log == nil {
		m.log = &logTail{}
	}
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, m.log, zap.WarnLevel)).Named(m.name)
}

// newClusterMembers describes n members with distinct free ports and data
// directories under root.
func newClusterMembers(root string, n int) ([]*etcdMember, error) {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	members := make([]*etcdMember, n)
	peers := make([]string, n)
	for i := range members {
		m := &etcdMember{
			name:   fmt.Sprintf("m%d", i),
			client: url.URL{Scheme: "http", Host: ports[2*i]},
			peer:   url.URL{Scheme: "http", Host: ports[2*i+1]},
		}
		m.dir = filepath.Join(root, m.name)
		peers[i] = m.name + "=" + m.peer.String()
		members[i] = m
	}
	for _, m := range members {
		m.cluster = strings.Join(peers, ",")
	}
	return members, nil
}

// config builds a fresh embed.Config for m; embed.StartEtcd keeps a copy,
// so every start gets its own.
func (m *etcdMember) config() *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(m.logger())
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	// Ignored once the data directory holds a WAL, so restarts work too.
	cfg.InitialCluster = m.cluster
	cfg.InitialClusterToken = "testenv"
	cfg.ClusterState = embed.ClusterStateFlagNew
	return cfg
}

// startMembers starts the members concurrently (a member of a new cluster
// only becomes ready once a quorum is up) and waits until all are ready. On
// error every member that did start is stopped again.
func startMembers(members []*etcdMember) error {
	errs := make([]error, len(members))
	// One failed member can keep the others from ever reaching a quorum:
	// stop waiting for them then.
	abort := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			if errs[i] = m.start(abort); errs[i] != nil {
				once.Do(func() { close(abort) })
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, m := range members {
			m.halt()
		}
		for _, m := range members {
			m.wait()
		}
		return err
	}
	return nil
}

// start starts m and waits until it is ready to serve clients, or abort is
// closed.
func (m *etcdMember) start(abort <-chan struct{}) error {
	srv, err := embed.StartEtcd(m.config())
	if err != nil {
		return fmt.Errorf("start member %s (client %s, peer %s): %w", m.name, m.client.Host, m.peer.Host, err)
	}
	timer := time.NewTimer(etcdReadyTimeout)
	defer timer.Stop()
	select {
	case <-srv.Server.ReadyNotify():
		m.server = srv
		return nil
	case err := <-srv.Err():
		closeServer(srv)
		return fmt.Errorf("member %s: %w; recent log:\n%s", m.name, err, m.log)
	case <-timer.C:
		closeServer(srv)
		return fmt.Errorf("member %s not ready after %v; recent log:\n%s", m.name, etcdReadyTimeout, m.log)
	case <-abort:
		closeServer(srv)
		return fmt.Errorf("member %s: start aborted: another member failed", m.name)
	}
}

// halt stops m's server at once if it runs: HardStop ends raft without
// handing leadership over, as a crash would (the WAL is closed cleanly), so
// the member is gone when halt returns. Close then releases listeners and
// goroutines in the background, because it waits up to the request timeout
// (about 5 s) for client streams still open on the member; wait joins it.
func (m *etcdMember) halt() {
	srv := m.server
	if srv == nil {
		return
	}
	m.server = nil
	srv.Server.HardStop()
	closed := make(chan struct{})
	m.closed = closed
	go func() {
		defer close(closed)
		srv.Close() // HardStop already ran: see closeServer
	}()
}

// closeServer stops srv at once and closes it. HardStop before Close spares
// Close a leadership transfer, which waits the full request timeout when
// the peers are stopping too: once raft is stopped the transfer finds no
// connected peer and is skipped.
func closeServer(srv *embed.Etcd) {
	srv.Server.HardStop()
	srv.Close()
}

// wait returns once the last halted server is fully closed.
func (m *etcdMember) wait() {
	if m.closed != nil {
		<-m.closed
	}
}

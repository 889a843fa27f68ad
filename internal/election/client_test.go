package election

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

func TestClientConfig_EtcdConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  ClientConfig
		want string // substring of the error; "" for none
	}{
		{"Plain", ClientConfig{Endpoints: []string{"127.0.0.1:2379"}}, ""},
		{"NoEndpoints", ClientConfig{}, "endpoints: empty"},
		{"CertWithoutKey", ClientConfig{Endpoints: []string{"h:1"}, CertFile: "c.pem"}, "together"},
		{"PasswordWithoutUser", ClientConfig{Endpoints: []string{"h:1"}, Password: "x"}, "without username"},
		{"HTTPWithTLS", ClientConfig{Endpoints: []string{"http://h:1"}, CAFile: "ca.pem"}, "http:// with tls"},
		{"MissingCA", ClientConfig{Endpoints: []string{"https://h:1"}, CAFile: "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.etcdConfig(testLogger(t))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("etcdConfig() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("etcdConfig() = %v, want an error containing %q", err, tt.want)
			case err != nil:
				return
			}
			if got.DialKeepAliveTime != keepAliveTime || got.DialKeepAliveTimeout != keepAliveTimeout {
				t.Fatalf("keep-alive %v/%v, want %v/%v", got.DialKeepAliveTime, got.DialKeepAliveTimeout, keepAliveTime, keepAliveTimeout)
			}
			if got.DialTimeout != defaultDialTimeout || got.RejectOldCluster {
				t.Fatalf("dial timeout %v, reject old cluster %v; want %v, false", got.DialTimeout, got.RejectOldCluster, defaultDialTimeout)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	t.Run("TLS", func(t *testing.T) {
		ctx := testContext(t)
		etcd := testenv.MustEtcd(t)
		pki := newTestPKI(t)
		addr := tlsForwarder(t, pki.serverTLS(t), etcd.Endpoint(0))

		cli, err := NewClient(ClientConfig{
			Endpoints: []string{"https://" + addr},
			CAFile:    pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey,
		}, testLogger(t))
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer cli.Close()
		if _, err := cli.Put(ctx, "/test/tls", "ok"); err != nil {
			t.Fatalf("put over TLS: %v", err)
		}

		// Without a client certificate the forwarder refuses the handshake.
		anon, err := NewClient(ClientConfig{Endpoints: []string{"https://" + addr}, CAFile: pki.caFile}, testLogger(t))
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer anon.Close()
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := anon.Put(actx, "/test/tls", "anonymous"); err == nil {
			t.Fatalf("put without client certificate succeeded")
		}
	})

	t.Run("Auth", func(t *testing.T) {
		ctx := testContext(t)
		etcd := testenv.MustEtcd(t)
		admin := etcd.Client(t)
		if _, err := admin.UserAdd(ctx, "root", "s3cret"); err != nil {
			t.Fatalf("add user: %v", err)
		}
		if _, err := admin.UserGrantRole(ctx, "root", "root"); err != nil {
			t.Fatalf("grant role: %v", err)
		}
		if _, err := admin.AuthEnable(ctx); err != nil {
			t.Fatalf("enable auth: %v", err)
		}
		cli, err := NewClient(ClientConfig{Endpoints: etcd.Endpoints(), Username: "root", Password: "s3cret"}, testLogger(t))
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer cli.Close()
		// A whole term needs leases, transactions and watches: all of
		// them must pass authentication.
		w := newWorld(t, "/test/auth")
		n := w.start(cli, "a")
		w.waitLeader(ctx, 0)
		n.stop(t)

		wrong, err := NewClient(ClientConfig{Endpoints: etcd.Endpoints(), Username: "root", Password: "wrong"}, testLogger(t))
		if err == nil {
			defer wrong.Close()
			_, err = wrong.Get(ctx, "/test/auth")
		}
		if err == nil {
			t.Fatalf("wrong password accepted")
		}
		if _, err := cli.AuthDisable(ctx); err != nil {
			t.Fatalf("disable auth: %v", err)
		}
	})
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("create ca: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("parse ca: %v", err)
	}
	p := testPKI{caFile: filepath.Join(dir, "ca.pem")}
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP, name string) (string, string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("create %s certificate: %v", name, err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatalf("marshal %s key: %v", name, err)
		}
		cert, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, cert, "CERTIFICATE", der)
		writePEM(t, kf, "EC PRIVATE KEY", keyDER)
		return cert, kf
	}
	p.serverCert, p.serverKey = issue(2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")}, "server")
	p.clientCert, p.clientKey = issue(3, x509.ExtKeyUsageClientAuth, nil, "client")
	return p
}

// serverTLS returns a server configuration that requires client
// certificates signed by the CA and speaks HTTP/2, as gRPC needs.
func (p testPKI) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatalf("load server certificate: %v", err)
	}
	pem, err := os.ReadFile(p.caFile)
	if err != nil {
		t.Fatalf("read ca: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return k
}

func writePEM(t *testing.T, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

// tlsForwarder terminates TLS with cfg on a loopback port and forwards the
// plain stream to target, standing in for an etcd member serving TLS. It
// stops, with every goroutine joined, when the test ends.
func tlsForwarder(t *testing.T, cfg *tls.Config, target string) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("tls listen: %v", err)
	}
	return testenv.Serve(t, ln, func(c net.Conn) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer up.Close()
		// Closing c (at the end of the test) ends the first copy, whose
		// closing of up ends the second.
		var pipes sync.WaitGroup
		pipes.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
		pipes.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		pipes.Wait()
	})
}

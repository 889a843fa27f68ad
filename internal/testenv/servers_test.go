package testenv

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// serverLine sends req to addr and returns the first line of the reply.
func serverLine(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		t.Fatalf("read from %s: %v", addr, err)
	}
	return strings.TrimSpace(line)
}

func TestMustRedis(t *testing.T) {
	r := MustRedis(t)
	if got := serverLine(t, r.Addr(), "SET k v\r\n"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	if got := serverLine(t, r.Addr(), "CONFIG GET save\r\n"); got != "*2" {
		t.Fatalf("CONFIG GET save = %q", got)
	}
	r.Restart(t)
	// Nothing survives a restart: no persistence.
	if got := serverLine(t, r.Addr(), "EXISTS k\r\n"); got != ":0" {
		t.Fatalf("EXISTS k after restart = %q, want :0", got)
	}
}

func TestMustZooKeeper(t *testing.T) {
	z := MustZooKeeper(t)
	if got := serverLine(t, z.Addr(), "srvr"); !strings.HasPrefix(got, "Zookeeper version") {
		t.Fatalf("srvr = %q", got)
	}
}

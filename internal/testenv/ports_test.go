package testenv

import (
	"net"
	"testing"
)

func TestFreePorts(t *testing.T) {
	t.Parallel()
	addrs, err := FreePorts(4)
	if err != nil {
		t.Fatalf("FreePorts: %v", err)
	}
	if len(addrs) != 4 {
		t.Fatalf("FreePorts(4) = %v, want 4 addresses", addrs)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("address %q, want 127.0.0.1:port", a)
		}
		if seen[a] {
			t.Fatalf("FreePorts(4) = %v, want distinct addresses", addrs)
		}
		seen[a] = true
		// Free, as promised: a server can bind it.
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("listen on %s: %v", a, err)
		}
		_ = ln.Close()
	}
}

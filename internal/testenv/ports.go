package testenv

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// FreePorts returns n distinct loopback addresses ("127.0.0.1:port") whose
// ports were free a moment ago, for servers whose addresses must be known
// before they start (a cluster's peer URLs). All listeners are held until
// every port is picked so the addresses differ. Another process may take a
// port before the server binds it; a caller that can, starts again on fresh
// ports then.
func FreePorts(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick free port: %w", err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// isAddrInUse reports whether err says that a port was taken.
func isAddrInUse(err error) bool {
	// embed does not always wrap the listener's error with %w.
	return errors.Is(err, syscall.EADDRINUSE) || (err != nil && strings.Contains(err.Error(), "address already in use"))
}

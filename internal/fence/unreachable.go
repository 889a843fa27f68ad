package fence

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reports whether err says that the store's server could not be reached or is
// not taking connections yet (refused, reset, timed out, its socket file gone, starting up or
// shutting down, out of connection slots): a condition that passes, unlike a wrong password,
// a database that does not exist, a TLS setting the server refuses or a schema that is
// behind. A replica started during a database outage waits for the server on these, and
// fails at once on anything else.
//
// A connection string may name several hosts, and a host several addresses: the error then
// joins one error per address tried, and it is waited for only if every one of them would be,
// so that one address down does not hide another's misconfiguration.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	return passes(err)
}

// passes judges one node of an error tree: a join by all its branches, a wrapper by what it
// wraps.
func passes(err error) bool {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, c := range errs {
			if !passes(c) {
				return false
			}
		}
		return len(errs) > 0
	case *pgconn.PgError:
		switch e.Code {
		case "08000", "08001", "08003", "08004", "08006", // the connection failed, not what it said
			"57P01", "57P02", "57P03", // shutting down, crashed, starting up or in recovery
			"53300": // too_many_connections
			return true
		}
		return false // 08P01 included: a pooler's refusal of the database, user or a setting
	case *net.OpError:
		return e.Timeout() || dialPasses(e.Err)
	case *net.DNSError:
		return e.IsTemporary || e.IsTimeout
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == context.DeadlineExceeded {
		return true
	}
	if w := errors.Unwrap(err); w != nil {
		return passes(w)
	}
	return false
}

// dialPasses judges the system error under a failed dial, read or write.
func dialPasses(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EHOSTDOWN, syscall.ENETDOWN, syscall.ETIMEDOUT,
		syscall.ENOENT: // a Unix socket whose server is down: its file is removed
		return true
	}
	return false
}

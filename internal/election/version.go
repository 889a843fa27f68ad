package election

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// minimumVersions is what the documentation asks for, as operators read it.
const minimumVersions = "3.5.23, 3.6.5 or 3.7"

// versionTimeout bounds the version request to one endpoint.
const versionTimeout = 5 * time.Second

// CheckServerVersions asks every endpoint of cli for its etcd server version
// and logs a warning for each server older than the documented minimum, whose
// lease and revision bugs weaken the guarantees this package relies on: a
// renewal reported successful for a lease being revoked, revisions going
// backwards, lease expiry by the wall clock. It never fails: an endpoint that
// does not answer is logged and skipped, and an old server is still used.
func CheckServerVersions(ctx context.Context, cli *clientv3.Client, lg *zap.Logger) {
	checkVersions(ctx, cli.Endpoints(), func(ctx context.Context, ep string) (string, error) {
		resp, err := cli.Status(ctx, ep)
		if err != nil {
			return "", err
		}
		return resp.Version, nil
	}, lg.Named("etcd-version"))
}

// checkVersions is CheckServerVersions with the version request injected.
func checkVersions(ctx context.Context, endpoints []string, version func(context.Context, string) (string, error), lg *zap.Logger) {
	for _, ep := range endpoints {
		vctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), versionTimeout)
		v, err := version(vctx, ep)
		cancel()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			lg.Info("etcd server version not checked", zap.String("endpoint", ep), zap.Error(err))
		case versionProblem(v) != "":
			lg.Warn("etcd server older than the documented minimum ("+minimumVersions+")",
				zap.String("endpoint", ep), zap.String("version", v), zap.String("why", versionProblem(v)))
		default:
			lg.Info("etcd server", zap.String("endpoint", ep), zap.String("version", v))
		}
	}
}

// serverVersion is a parsed etcd version: major.minor.patch, and whether it
// is a pre-release of that version.
type serverVersion struct {
	major, minor, patch int
	pre                 bool
}

// parseVersion reads "3.5.23", "v3.6.0-rc.1", "3.4" or "3.5.9+git";
// ok is false for anything else.
func parseVersion(s string) (v serverVersion, ok bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, v.pre = s[:i], true
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return serverVersion{}, false
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' {
			return serverVersion{}, false
		}
		nums[i] = n
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	return v, true
}

// before reports whether v is older than major.minor.patch; a pre-release
// comes before its release.
func (v serverVersion) before(major, minor, patch int) bool {
	switch {
	case v.major != major:
		return v.major < major
	case v.minor != minor:
		return v.minor < minor
	case v.patch != patch:
		return v.patch < patch
	default:
		return v.pre
	}
}

// versionProblem says why an etcd server of version s is below the
// documented minimum, or returns "" when it is not.
func versionProblem(s string) string {
	v, ok := parseVersion(s)
	if !ok {
		return fmt.Sprintf("version %q not understood; this scheduler is meant for etcd %s", s, minimumVersions)
	}
	const revoked = "a lease renewal can be reported successful for a lease being revoked (etcd #20813)"
	switch {
	case v.major < 3 || v.major == 3 && v.minor < 5:
		return "etcd 3.4 and older expire leases by the wall clock, so a clock step on the etcd leader ends terms early or keeps a dead leader's key (etcd #12291), and lack the lease and revision fixes of 3.5.23 and 3.6.5"
	case v.major == 3 && v.minor == 5 && v.before(3, 5, 14):
		return revoked + ", and revisions, so fencing tokens, can go backwards after a crash during compaction (etcd #17780); fixed in 3.5.14 and 3.5.23"
	case v.major == 3 && v.minor == 5 && v.before(3, 5, 23):
		return revoked + "; fixed in 3.5.23"
	case v.major == 3 && v.minor == 6 && v.before(3, 6, 5):
		return revoked + "; fixed in 3.6.5"
	default:
		return ""
	}
}

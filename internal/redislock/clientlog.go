package redislock

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// ClientLogs routes the Redis client library's own log lines (its connection pool's dial
// failures, for one) into lg, at debug level: the campaigner and the observer already report
// every failure they meet, structured and at the level it deserves, and the library would
// otherwise write its lines to stderr unstructured. The library's logger is process-wide.
func ClientLogs(lg *zap.Logger) { redis.SetLogger(clientLog{lg.Named("redis-client").Sugar()}) }

// clientLog is the library's Logging interface over zap.
type clientLog struct{ lg *zap.SugaredLogger }

// Printf implements the library's Logging.
func (c clientLog) Printf(_ context.Context, format string, v ...any) { c.lg.Debugf(format, v...) }

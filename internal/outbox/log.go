package outbox

import (
	"context"

	"go.uber.org/zap"

	"scheduler"
)

// Log "delivers" messages by logging them, for development: `make run`
// shows the e-mails and webhooks its jobs queue without a mail server.
type Log struct{ lg *zap.Logger }

// NewLog returns a Log deliverer writing to lg.
func NewLog(lg *zap.Logger) *Log {
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Log{lg: lg.Named("outbox")}
}

// Deliver logs m at info level and never fails.
func (l *Log) Deliver(_ context.Context, m scheduler.Message, token int64) error {
	l.lg.Info("message logged", zap.String("key", m.Key), zap.String("job", m.Job), zap.Time("slot", m.ScheduledAt),
		zap.Int64("token", token), zap.String("kind", string(m.Kind)), zap.String("destination", m.Destination),
		zap.String("subject", m.Subject), zap.String("body", m.Body))
	return nil
}

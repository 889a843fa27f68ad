package main

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/fence"
	"scheduler/internal/outbox"
)

// newDispatcher returns the leader's dispatcher of the outbox in store: e-mails over SMTP, or
// to the log with outbox.log, and webhooks over HTTP; dead makes the notice of a dead message,
// and scrub takes the configured secrets out of a delivery's error.
func newDispatcher(o config.OutboxConfig, store *fence.Store, lg *zap.Logger, observe func(scheduler.Message, scheduler.Delivery),
	dead func(scheduler.Message, scheduler.Delivery) *scheduler.Notice, scrub func(string) string) (*outbox.Dispatcher, error) {
	hook, err := outbox.NewWebhook(outbox.WebhookConfig{Hosts: o.Webhook.Hosts})
	if err != nil {
		return nil, fmt.Errorf("outbox webhooks: %w", err)
	}
	ds := map[scheduler.MessageKind]outbox.Deliverer{scheduler.MessageWebhook: hook}
	switch {
	case o.SMTP.Addr != "":
		s, err := outbox.NewSMTP(config.SMTPConfig(o.SMTP))
		if err != nil {
			return nil, fmt.Errorf("outbox.smtp: %w", err)
		}
		ds[scheduler.MessageEmail] = s
	case o.Log:
		ds[scheduler.MessageEmail] = outbox.NewLog(lg)
	}
	return outbox.New(outbox.Config{
		Store: store, Deliverers: ds, Batch: o.Batch, MaxAttempts: o.MaxAttempts,
		RetryBackoff: o.RetryBackoff, MaxBackoff: max(outbox.DefaultMaxBackoff, o.RetryBackoff),
		Fenced:     func(err error) bool { return errors.Is(err, scheduler.ErrFenced) },
		NotClaimed: func(err error) bool { return errors.Is(err, fence.ErrNotClaimed) },
		Observe:    observe, Dead: dead, Scrub: scrub, Logger: lg,
	})
}

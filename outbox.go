package scheduler

import "time"

// The outbox's vocabulary: the e-mails and webhooks that jobs queue in their
// fenced transactions, which the store keeps and the leader's dispatcher
// delivers.

// MessageKind is how a message is delivered.
type MessageKind string

// The kinds of message.
const (
	// MessageEmail is an e-mail: Destination is the recipient's address, Subject
	// and Body the plain-text message.
	MessageEmail MessageKind = "email"
	// MessageWebhook is an HTTP POST: Destination is the URL, Body the JSON body.
	MessageWebhook MessageKind = "webhook"
)

// MessageStatus is where a message is in its delivery.
type MessageStatus string

// The statuses of a message.
const (
	// MessagePending waits for its next attempt.
	MessagePending MessageStatus = "pending"
	// MessageSending is claimed by a dispatcher, which is delivering it.
	MessageSending MessageStatus = "sending"
	// MessageDelivered was accepted by its receiver.
	MessageDelivered MessageStatus = "delivered"
	// MessageDead failed for good; an operator can queue it again.
	MessageDead MessageStatus = "dead"
)

// Message is one row of the outbox.
type Message struct {
	// Key identifies the message for ever: it is unique in the outbox and
	// the receiver's deduplication key (Message-ID, Idempotency-Key). Up to
	// 200 characters of A-Z a-z 0-9 _ ~ / + = - and dots between them (the
	// left side of a Message-ID).
	Key string
	// Job, ScheduledAt and Manual are the slot whose run queued it.
	Job         string
	ScheduledAt time.Time
	Manual      bool
	// Token is the fencing token of the transaction that queued it.
	Token int64
	// Kind, Destination, Subject and Body are what to deliver, and where.
	Kind        MessageKind
	Destination string
	Subject     string
	Body        string

	// The delivery state, set by the store.
	Status MessageStatus
	// Attempts counts the claims of the message: each is a delivery started.
	Attempts int
	// NextAttempt is when a pending message is due.
	NextAttempt time.Time
	// ClaimToken is the token of the dispatcher that claimed it last; zero
	// before its first claim.
	ClaimToken int64
	// LastError is the error of the last failed attempt.
	LastError string
	// Created, Updated and Delivered (zero until delivered) are store
	// times; Updated of a sending message is the time of its claim.
	Created, Updated, Delivered time.Time
}

// DeliveryOutcome is the result of one delivery attempt.
type DeliveryOutcome string

// The outcomes of an attempt.
const (
	// DeliveryOK: the receiver accepted the message.
	DeliveryOK DeliveryOutcome = "delivered"
	// DeliveryRetry: the attempt failed; the message is due again at Delivery.Next.
	DeliveryRetry DeliveryOutcome = "retry"
	// DeliveryDead: the message failed for good.
	DeliveryDead DeliveryOutcome = "dead"
)

// Delivery is what the store records about one delivery attempt. The
// dispatcher decides the outcome and the next attempt (its retry policy);
// the store records them.
type Delivery struct {
	Outcome DeliveryOutcome
	// Error is the attempt's error, for Retry and Dead.
	Error string
	// At is when the attempt ended.
	At time.Time
	// Next is when a retried message is due again.
	Next time.Time
	// Notice, when set on a dead outcome, is queued by the record of it, in its write, as
	// notifications of the message's slot (the job's failure notifications).
	Notice *Notice
}

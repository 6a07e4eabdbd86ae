package store

import "time"

// Webhook is a project's delivery target. Secret is sealed; EventTypes
// nil means every type. Mode is the mode ("live" or "test") of the key
// that created it: test-mode webhooks may target private addresses.
type Webhook struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"projectId"`
	URL        string    `json:"url"`
	Secret     []byte    `json:"secret"`
	EventTypes []string  `json:"eventTypes"`
	Mode       string    `json:"mode"`
	CreatedAt  time.Time `json:"createdAt"`
}

// Job is one event queued for one webhook. Body holds the exact bytes
// every attempt sends. Attempt is the number of the next attempt.
type Job struct {
	Seq           uint64    `json:"seq"`
	WebhookID     string    `json:"webhookId"`
	ProjectID     string    `json:"projectId"`
	EventID       string    `json:"eventId"`
	EventType     string    `json:"eventType"`
	Body          []byte    `json:"body"`
	Attempt       int       `json:"attempt"`
	CreatedAt     time.Time `json:"createdAt"`
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

// Delivery records one delivery attempt. Seq orders a webhook's
// attempts in the store; ID is the attempt's public id (empty in records
// written before it existed, whose "id" was the sequence number).
type Delivery struct {
	Seq            uint64     `json:"id"`
	ID             string     `json:"uid"`
	WebhookID      string     `json:"webhookId"`
	EventID        string     `json:"eventId"`
	EventType      string     `json:"eventType"`
	Attempt        int        `json:"attempt"`
	Status         string     `json:"status"`
	ResponseStatus int        `json:"responseStatus"`
	Error          string     `json:"error"`
	DurationMS     int64      `json:"durationMs"`
	CreatedAt      time.Time  `json:"createdAt"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt"`
}

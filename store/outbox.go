package store

import (
	"encoding/json"
	"time"
)

// Event is a webhook event in the transactional outbox, written in the
// same transaction as the change it reports.
type Event struct {
	Seq       uint64          `json:"seq"`
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

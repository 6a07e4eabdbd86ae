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

// BackchannelLogoutEvent is the Type of the outbox events that are not
// webhook events: each asks for an OpenID back-channel logout token to
// be posted to one client of the event's project (Data is a
// BackchannelLogout). It is written in the transaction that ends the
// session, and the webhook worker delivers it, with the webhooks'
// retries, as a job of its own target (BackchannelTarget); no webhook
// ever receives it.
const BackchannelLogoutEvent = "oidc.backchannel_logout"

// BackchannelLogout is the Data of a BackchannelLogoutEvent: the client
// to tell, and the user and session that ended.
type BackchannelLogout struct {
	ClientID  string `json:"clientId"`
	UserID    string `json:"userId"`
	SessionID string `json:"sessionId"`
}

// BackchannelJobPrefix starts the WebhookID of the queued jobs that
// deliver back-channel logout tokens (BackchannelTarget); webhook ids
// never start with it.
const BackchannelJobPrefix = "oidc-bcl:"

// BackchannelTarget returns the WebhookID of the jobs that deliver
// back-channel logout tokens to client clientID of projectID: the
// client's deliveries are one queue, in order.
func BackchannelTarget(projectID, clientID string) string {
	return BackchannelJobPrefix + projectID + "/" + clientID
}

package auth

import (
	"encoding/json"

	"github.com/google/uuid"

	"latchkey/store"
)

// Meta describes the request behind a use case, for events and risk.
type Meta struct {
	IP          string
	UserAgent   string
	DeviceToken string
	// EndUserIP reports that IP is the end user's own address: sent as
	// X-End-User-IP, or the address of a request without an API key (a
	// browser; its peer or a trusted proxy's X-Forwarded-For). An API-key
	// call without X-End-User-IP has the app backend's address instead
	// (through a proxy too), and the risk engine then counts against the
	// account (reserveRisk).
	EndUserIP bool
	// Locale is the end user's language as the request gives it: the
	// send body's locale, else the Accept-Language the app passed on
	// (docs/api.md, "Mail templates"). It picks the project's mail
	// template.
	Locale string
}

// emit writes a webhook event into the outbox inside tx and wakes the
// delivery worker after commit.
func (s *Service) emit(tx store.Tx, projectID, typ string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	e := &store.Event{ID: "evt_" + uuid.NewString(), ProjectID: projectID, Type: typ, CreatedAt: s.now().UTC(), Data: raw}
	if err := tx.AppendEvent(e); err != nil {
		return err
	}
	tx.OnCommit(s.wake)
	return nil
}

// sessionCreated and userRegistered are the data of the two events
// every first sign-in emits, as structs because they are written inside
// the sign-in's transaction (a map is sorted and reflected on each
// time); fields in name order, as a map's keys would be encoded.
type (
	sessionCreated struct {
		Method    string `json:"method"`
		SessionID string `json:"session_id"`
		UserID    string `json:"user_id"`
	}
	userRegistered struct {
		Email  string `json:"email"`
		UserID string `json:"user_id"`
	}
)

// observe tells the Observer of an authentication event (recorded or
// suppressed); callers run it once the event's transaction commits.
func (s *Service) observe(e *store.AuthEvent) {
	if s.obs != nil {
		s.obs.AuthEvent(e.Method, e.Action, e.FailureCode)
	}
}

func clipUA(ua string) string {
	if len(ua) > 256 {
		return ua[:256]
	}
	return ua
}

// countsForVelocity reports whether a failed (method, action) is a login
// verification for the risk engine. Sends, backup-code generation and
// Pattern B callbacks (posted by the verifier's server) are not; nor are
// checks on a session (SMS, TOTP, address confirmation): they have their
// own lockouts and their IP is the caller's peer, often the app's own
// backend.
func countsForVelocity(method, action string) bool {
	switch action {
	case "send", "generate", "callback", "update", "reset":
		return false
	}
	switch method {
	case "sms", "totp", methodEmailVerify, methodEmailChange:
		return false
	}
	return true
}

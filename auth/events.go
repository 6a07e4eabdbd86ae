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

	risk *riskSlot // the verification's velocity slot, marked failed by record
}

// emit writes a webhook event into the outbox inside tx and wakes the
// delivery worker after commit.
func (s *Service) emit(tx *store.Tx, projectID, typ string, data any) error {
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

// record writes an authentication event inside tx. A nil fail is a
// success; otherwise its category is the event's failureCode. A failed
// verification marks its risk slot (m.risk) failed once tx commits. A
// failure that names no user may be suppressed (suppress.go): then it is
// only counted, once tx commits.
func (s *Service) record(tx *store.Tx, projectID, userID, email, method, action string, fail error, m Meta) error {
	e := s.authEvent(projectID, userID, email, method, action, fail, m)
	if slot := velocitySlot(method, action, fail, m); slot != nil {
		tx.OnCommit(func() { slot.failed = true })
	}
	tx.OnCommit(func() { s.observe(e) })
	if s.suppressed(e) {
		tx.OnCommit(func() { s.suppress.count(e) })
		return nil
	}
	return tx.AddAuthEvent(e)
}

// recordOnly records a failed attempt in its own transaction and returns
// fail; used where the attempt changes nothing else. A suppressed failure
// is only counted: no transaction at all.
func (s *Service) recordOnly(projectID, userID, email, method, action string, fail error, m Meta) error {
	e := s.authEvent(projectID, userID, email, method, action, fail, m)
	if s.suppressed(e) {
		if slot := velocitySlot(method, action, fail, m); slot != nil {
			slot.failed = true
		}
		s.suppress.count(e)
		s.observe(e)
		return fail
	}
	slot := velocitySlot(method, action, fail, m)
	err := s.db.Batch(func(tx *store.Tx) error {
		if slot != nil {
			tx.OnCommit(func() { slot.failed = true })
		}
		tx.OnCommit(func() { s.observe(e) })
		return tx.AddAuthEvent(e)
	})
	if err != nil {
		s.log.Error("record event", "err", err)
	}
	return fail
}

// observe tells the Observer of an authentication event (recorded or
// suppressed); callers run it once the event's transaction commits.
func (s *Service) observe(e *store.AuthEvent) {
	if s.obs != nil {
		s.obs.AuthEvent(e.Method, e.Action, e.FailureCode)
	}
}

// velocitySlot returns the risk slot a failed outcome must mark failed:
// m.risk when fail is a wrong guess at a login verification, else nil.
func velocitySlot(method, action string, fail error, m Meta) *riskSlot {
	if fail == nil || m.risk == nil || !countsForVelocity(method, action) || !isVerifyFailure(AsError(fail)) {
		return nil
	}
	return m.risk
}

// authEvent is the event of an outcome (fail nil: a success).
func (s *Service) authEvent(projectID, userID, email, method, action string, fail error, m Meta) *store.AuthEvent {
	e := &store.AuthEvent{ID: uuid.NewString(), ProjectID: projectID, UserID: userID, Email: email,
		Method: method, Action: action, Success: fail == nil, IP: m.IP, UserAgent: clipUA(m.UserAgent),
		CreatedAt: s.now().UTC()}
	if fail != nil {
		e.FailureCode = AsError(fail).Category
		if e.FailureCode == "" {
			e.FailureCode = CatInternal
		}
	}
	return e
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

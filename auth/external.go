package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"latchkey/store"
)

// External-method parameters: verifiedAt within 60 s of now, a Pattern B
// result redeemable for 5 minutes (docs/api.md, "External methods").
const (
	ExternalWindow   = 60 * time.Second
	GrantLifetime    = 5 * time.Minute
	codeKindReplay   = "replay"
	hashDomainGrant  = "grant"
	maxExternalField = 255
)

// confirmBody is the decoded confirm (or callback) body. Fields are
// json.RawMessage-free strings; presence and type are checked by parse.
type confirmBody struct {
	ExternalUserID string
	Method         string
	VerifiedAt     time.Time
	Email          string
	Reference      string
}

// parseConfirm reads a signed body: a JSON object whose required fields
// are non-empty strings. need lists the required fields besides
// externalUserId and verifiedAt. Anything else is 400 INVALID_PAYLOAD.
func parseConfirm(raw []byte, need ...string) (*confirmBody, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return nil, ErrInvalidPayload.With("Body must be a JSON object.")
	}
	str := func(name string, required bool) (string, error) {
		v, ok := m[name]
		if !ok || string(v) == "null" {
			if required {
				return "", ErrInvalidPayload.With(name + " is required.")
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", ErrInvalidPayload.With(name + " must be a string.")
		}
		if required && s == "" || len(s) > maxExternalField {
			return "", ErrInvalidPayload.With(name + " must be 1 to 255 characters.")
		}
		return s, nil
	}
	var b confirmBody
	var err error
	if b.ExternalUserID, err = str("externalUserId", true); err != nil {
		return nil, err
	}
	var at string
	if at, err = str("verifiedAt", true); err != nil {
		return nil, err
	}
	if b.VerifiedAt, err = parseVerifiedAt(at); err != nil {
		return nil, ErrInvalidPayload.With("verifiedAt must be an ISO-8601 UTC timestamp.")
	}
	if b.Email, err = str("email", false); err != nil {
		return nil, err
	}
	for _, f := range need {
		v, err := str(f, true)
		if err != nil {
			return nil, err
		}
		switch f {
		case "method":
			b.Method = v
		case "reference":
			b.Reference = v
		}
	}
	return &b, nil
}

// parseVerifiedAt reads an ISO-8601 timestamp: RFC 3339 with "Z" or an
// offset, or date and time without a zone, which is taken as UTC (the
// field is defined as UTC). Fractional seconds are optional.
func parseVerifiedAt(at string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		return t, nil
	}
	return time.ParseInLocation("2006-01-02T15:04:05", at, time.UTC)
}

// checkSigned applies the shared checks after the registration is known:
// status, pattern, signature over the raw body, freshness and replay.
// It runs inside tx so the replay mark commits with the login.
func (s *Service) checkSigned(tx store.Tx, reg *store.ExternalMethod, pattern string, raw []byte, sig string, at time.Time) error {
	if reg.Status != "active" {
		return ErrInactiveRegistration
	}
	if reg.Pattern != pattern {
		return ErrWrongPattern
	}
	secret, err := s.keys.Open(reg.Secret, []byte("method:"+reg.ID))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(raw)
	want := mac.Sum(nil)
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil || !hmac.Equal(got, want) {
		return ErrInvalidSignature
	}
	now := s.now()
	if d := now.Sub(at); d > ExternalWindow || d < -ExternalWindow {
		return ErrStaleTimestamp
	}
	key := hex.EncodeToString(want)
	if c, err := tx.Code(codeKindReplay, reg.ID, key); err == nil && now.Before(c.ExpiresAt) {
		return ErrReplayed
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return tx.PutCode(&store.Code{Kind: codeKindReplay, ProjectID: reg.ID, Subject: key, CreatedAt: now.UTC(), ExpiresAt: now.Add(2 * ExternalWindow).UTC()})
}

// ExternalLogin is the confirm/redeem login result.
type ExternalLogin struct {
	*Login
	ExternalUserID string
}

// ConfirmExternal signs a user in on a signed confirmation from an
// external verifier (Pattern A). Checks run in the decided order:
// payload, registration status, pattern, signature, freshness, replay.
// A refused confirmation changes nothing (not even the replay mark) and
// is recorded on its own.
func (s *Service) ConfirmExternal(ctx context.Context, p *store.Project, raw []byte, sig string, m Meta) (*ExternalLogin, error) {
	a := s.attempt(ctx, p.ID, "external", "confirm", m)
	b, err := parseConfirm(raw, "method")
	if err != nil {
		return nil, a.reject(err)
	}
	if err := a.reserveRisk(p, subject{externalID: b.ExternalUserID}); err != nil {
		return nil, a.reject(err)
	}
	defer a.release()
	a.email = b.Email
	var login *Login
	err = a.update(func(tx store.Tx) error {
		login = nil
		reg, err := tx.ExternalMethodByName(p.ID, b.Method)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidPayload.With("Unknown method.")
		} else if err != nil {
			return err
		}
		if err := s.checkSigned(tx, reg, "direct", raw, sig, b.VerifiedAt); err != nil {
			return err
		}
		login, err = s.externalLogin(tx, a, p, b.ExternalUserID, b.Email, reg.Method)
		return err
	})
	if isAuthError(err) {
		return nil, a.reject(err)
	} else if err != nil {
		return nil, internal(err)
	}
	l, err := s.finish(login)
	if err != nil {
		return nil, err
	}
	return &ExternalLogin{Login: l, ExternalUserID: b.ExternalUserID}, nil
}

// errInvalidReference is redeem's 401 INVALID_TOKEN.
var errInvalidReference = ErrInvalidToken.With("Unknown, used or expired reference.")

// externalLogin resolves the external user (known id; else attach by
// email to a user without an external id; else create) and starts a
// session, inside tx, recording a's success. The app vouches for the
// address, so the user ends verified, and an unverified account the
// email would attach to is replaced by a new user as an email-code
// sign-in would (provenUser).
func (s *Service) externalLogin(tx store.Tx, a *attempt, p *store.Project, ext, rawEmail, method string) (*Login, error) {
	u, err := tx.UserByExternalID(p.ID, ext)
	isNew := false
	if errors.Is(err, store.ErrNotFound) {
		email, err := newExternalEmail(rawEmail)
		if err != nil {
			return nil, err
		}
		// An account holding another external id is not attached to,
		// verified or not: 409, and nothing is replaced.
		if held, err := tx.UserByEmail(p.ID, email); err == nil && held.ExternalUserID != "" {
			return nil, ErrExternalIDMismatch
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		u, isNew, err = s.provenUser(tx, p, email)
		if err != nil {
			return nil, err
		}
		if u.Disabled {
			return nil, ErrUserDisabled
		}
		if err := s.attachExternalID(tx, u, ext); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if u.Disabled {
		return nil, ErrUserDisabled
	}
	if err := s.setVerified(tx, u); err != nil {
		return nil, err
	}
	l, err := s.startLogin(tx, p, u, "external:"+method, a.m)
	if err != nil {
		return nil, err
	}
	l.IsNewUser = isNew
	a.projectID, a.userID, a.email = p.ID, u.ID, u.Email
	return l, a.ok(tx)
}

// newExternalEmail checks the email that a new externalUserId needs:
// missing or invalid is 400 INVALID_PAYLOAD.
func newExternalEmail(raw string) (string, error) {
	if raw == "" {
		return "", ErrInvalidPayload.With("email is required for a new externalUserId.")
	}
	email, err := NormalizeEmail(raw)
	if err != nil {
		return "", ErrInvalidPayload.With("email is not a valid address.")
	}
	return email, nil
}

// checkExternalUser applies, without changing anything, the user checks
// a later redeem of (ext, rawEmail) in projectID would apply: a new
// externalUserId needs a valid email (400 INVALID_PAYLOAD), and that
// email must not belong to a user holding another externalUserId (409
// EXTERNAL_ID_CONFLICT).
func checkExternalUser(tx store.Tx, projectID, ext, rawEmail string) error {
	if _, err := tx.UserByExternalID(projectID, ext); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	email, err := newExternalEmail(rawEmail)
	if err != nil {
		return err
	}
	u, err := tx.UserByEmail(projectID, email)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if u.ExternalUserID != "" && u.ExternalUserID != ext {
		return ErrExternalIDConflict
	}
	return nil
}

// ExternalCallback accepts a Pattern B verifier's signed result for the
// registration id and stores a grant the app redeems within 5 minutes.
// It runs confirm's checks in the same order (a reference is required;
// an unknown registration is 400 INVALID_PAYLOAD), and the user checks of
// the later redeem: a new externalUserId without a valid email is 400
// INVALID_PAYLOAD, one whose email holds another externalUserId 409
// EXTERNAL_ID_CONFLICT. A reference already used for this registration
// is 401 REPLAYED. Every outcome is recorded as an event.
func (s *Service) ExternalCallback(ctx context.Context, registrationID string, raw []byte, sig string, m Meta) error {
	projectID := ""
	s.db.View(ctx, func(tx store.Tx) error {
		if reg, err := tx.ExternalMethod(registrationID); err == nil {
			projectID = reg.ProjectID
		}
		return nil
	})
	a := s.attempt(ctx, projectID, "external", "callback", m)
	b, err := parseConfirm(raw, "reference")
	if err != nil {
		return a.reject(err)
	}
	a.email = b.Email
	// A refused callback changes nothing (no write for an
	// unauthenticated failure, no replay mark) and is recorded on its own.
	err = a.update(func(tx store.Tx) error {
		reg, err := tx.ExternalMethod(registrationID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidPayload.With("Unknown registration.")
		} else if err != nil {
			return err
		}
		if err := s.checkSigned(tx, reg, "webhook", raw, sig, b.VerifiedAt); err != nil {
			return err
		}
		h := s.keys.HashString(hashDomainGrant, reg.ID+"\x00"+b.Reference)
		if _, err := tx.Grant(h[:]); err == nil {
			return ErrReplayed
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := checkExternalUser(tx, reg.ProjectID, b.ExternalUserID, b.Email); err != nil {
			return err
		}
		now := s.now().UTC()
		if err := tx.PutGrant(&store.Grant{Hash: h[:], MethodID: reg.ID, ProjectID: reg.ProjectID, ExternalUserID: b.ExternalUserID,
			Email: b.Email, CreatedAt: now, ExpiresAt: now.Add(GrantLifetime)}); err != nil {
			return err
		}
		a.projectID = reg.ProjectID
		return a.ok(tx)
	})
	if isAuthError(err) {
		return a.reject(err)
	}
	return internal(err)
}

// RedeemExternal exchanges a Pattern B grant for a login, once. Unknown,
// used or expired references (and an unknown method) are 401
// INVALID_TOKEN; an inactive registration 403 INACTIVE_REGISTRATION; a
// disabled user 403 USER_DISABLED (the grant stays unused). A refused
// redeem changes nothing and is recorded on its own.
func (s *Service) RedeemExternal(ctx context.Context, p *store.Project, method, reference string, m Meta) (*ExternalLogin, error) {
	a := s.attempt(ctx, p.ID, "external", "redeem", m)
	if method == "" || reference == "" {
		return nil, a.reject(Invalid("method and reference are required."))
	}
	if err := a.reserveRisk(p, subject{reference: method + "\x00" + reference}); err != nil {
		return nil, a.reject(err)
	}
	defer a.release()
	var login *Login
	var ext string
	err := a.update(func(tx store.Tx) error {
		login = nil
		reg, err := tx.ExternalMethodByName(p.ID, method)
		if errors.Is(err, store.ErrNotFound) {
			return errInvalidReference
		} else if err != nil {
			return err
		}
		if reg.Status != "active" {
			return ErrInactiveRegistration
		}
		h := s.keys.HashString(hashDomainGrant, reg.ID+"\x00"+reference)
		g, err := tx.Grant(h[:])
		if errors.Is(err, store.ErrNotFound) {
			return errInvalidReference
		} else if err == nil && g.UsedAt != nil {
			return errInvalidReference.withCategory(CatAlreadyUsed)
		} else if err == nil && !s.now().Before(g.ExpiresAt) {
			return errInvalidReference.withCategory(CatExpired)
		} else if err != nil {
			return err
		}
		used := s.now().UTC()
		g.UsedAt = &used
		if err := tx.PutGrant(g); err != nil {
			return err
		}
		ext = g.ExternalUserID
		login, err = s.externalLogin(tx, a, p, g.ExternalUserID, g.Email, reg.Method)
		return err
	})
	if isAuthError(err) {
		return nil, a.reject(err)
	} else if err != nil {
		return nil, internal(err)
	}
	l, err := s.finish(login)
	if err != nil {
		return nil, err
	}
	return &ExternalLogin{Login: l, ExternalUserID: ext}, nil
}

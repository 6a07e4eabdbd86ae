package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"latchkey/store"
)

// DashSessionTTL is how long a dashboard sign-in lasts.
const DashSessionTTL = 12 * time.Hour

// Dashboard sessions: the operator's sign-ins to the web dashboard, kept
// by the store (store.Dashboard: in memory on bbolt, a table on
// PostgreSQL so every replica knows them). The store sees a keyed hash
// of the cookie, and the flash sealed.
//
// A session belongs to the admin token that opened it: the keyed hash
// the store knows it by covers the admin token's own hash with the
// cookie (dashKey), so once another admin token is in force (configured
// anew and the server restarted) no cookie issued before finds its row,
// on either backend. Rotating the admin token signs every dashboard
// out; the rows left behind expire with their 12 hours.

const (
	hashDomainDash = "dashboard"
	hashDomainCSRF = "dashboard_csrf"
)

// dashFlashAAD binds a sealed flash to its purpose.
var dashFlashAAD = []byte("dashboard-flash")

// DashSession is a signed-in dashboard session as the pages use it.
type DashSession struct {
	// CSRF is the token every form of the session posts back.
	CSRF string
	// Flash is what the next pages show once.
	Flash DashFlash
}

// DashFlash is what a dashboard session's next pages show once: a notice
// saying what the last action did, and a secret just created (an API
// key, an external method's secret) for the one view of Page that shows
// it.
type DashFlash struct {
	Notice string    `json:"notice,omitempty"`
	Once   ShownOnce `json:"once,omitzero"`
}

// ShownOnce is a secret waiting for the one view of Page that shows it.
type ShownOnce struct {
	Page   string `json:"page,omitempty"`
	Label  string `json:"label,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// StartDashSession signs an operator in to the dashboard (the caller
// checked the admin token) and returns the cookie's value.
func (s *Service) StartDashSession(ctx context.Context) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	h := s.dashKey(id)
	err := s.db.PutDashSession(ctx, &store.DashSession{Hash: h[:], ExpiresAt: s.now().Add(DashSessionTTL)})
	if err != nil {
		return "", internal(err)
	}
	return id, nil
}

// DashSession returns the dashboard session whose cookie is id, and
// false when there is none (expired, signed out, or never made).
func (s *Service) DashSession(ctx context.Context, id string) (*DashSession, bool, error) {
	h := s.dashKey(id)
	d, err := s.db.DashSession(ctx, h[:], s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, internal(err)
	}
	csrf := s.keys.HashString(hashDomainCSRF, id)
	out := &DashSession{CSRF: base64.RawURLEncoding.EncodeToString(csrf[:])}
	out.Flash, _ = s.openFlash(d.Flash)
	return out, true, nil
}

// UpdateDashFlash changes session id's flash with fn, which reports
// whether it changed anything; a session that is gone is left so.
func (s *Service) UpdateDashFlash(ctx context.Context, id string, fn func(*DashFlash) bool) error {
	h := s.dashKey(id)
	err := s.db.UpdateDashFlash(ctx, h[:], func(sealed []byte) ([]byte, bool, error) {
		f, _ := s.openFlash(sealed)
		if !fn(&f) {
			return nil, false, nil
		}
		if f == (DashFlash{}) {
			return nil, true, nil
		}
		raw, err := json.Marshal(f)
		if err != nil {
			return nil, false, err
		}
		next, err := s.keys.Seal(raw, dashFlashAAD)
		return next, err == nil, err
	})
	return internal(err)
}

// EndDashSession signs the dashboard session id out.
func (s *Service) EndDashSession(ctx context.Context, id string) error {
	h := s.dashKey(id)
	return internal(s.db.DeleteDashSession(ctx, h[:]))
}

// dashKey is the keyed hash the store knows dashboard session id by: of
// the admin token in force (its keyed hash: the configured token's, else
// the stored one) and the cookie's value, so that a session opened with
// one admin token is unknown once another is in force.
func (s *Service) dashKey(id string) [store.HashSize]byte {
	admin := s.adminHash
	if s.adminToken != "" {
		h := s.keys.HashString(hashDomainAdm, s.adminToken)
		admin = h[:]
	}
	// The admin hash has a fixed size, so the two parts cannot run into
	// each other.
	return s.keys.Hash(hashDomainDash, append(slices.Clip(admin), id...))
}

// openFlash unseals a stored flash (none: the zero flash).
func (s *Service) openFlash(sealed []byte) (DashFlash, error) {
	var f DashFlash
	if len(sealed) == 0 {
		return f, nil
	}
	raw, err := s.keys.Open(sealed, dashFlashAAD)
	if err != nil {
		return f, err
	}
	return f, json.Unmarshal(raw, &f)
}

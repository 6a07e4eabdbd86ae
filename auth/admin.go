package auth

import (
	"context"
	"crypto/subtle"
	"net/netip"
	"strings"
	"time"

	"latchkey/store"
)

// AdminMaxFailures is how many failed admin-token checks one client
// address (an IPv6 address: its /64) may make per rolling minute.
const AdminMaxFailures = 10

// CheckAdminFrom is CheckAdmin for a request from client address ip,
// throttled: once ip has failed AdminMaxFailures times within the
// rolling minute, every check from it is 429 RATE_LIMIT_EXCEEDED (with
// the wait until its oldest failure leaves the minute), the right token
// too. Letting the right token through would answer every further guess
// (429 for a wrong one, 200 for the right one) and the throttle would
// stop nothing. Each check is counted before the token is compared and
// refunded when it matches, so concurrent guesses cannot exceed the
// limit either.
func (s *Service) CheckAdminFrom(header, ip string) error {
	key := ip
	if a, err := netip.ParseAddr(ip); err == nil {
		key = ipKey("", a).ip.String()
	}
	res := s.adminFails.Allow(key, AdminMaxFailures)
	if !res.Allowed {
		return ErrAdminThrottled.WithRetry(time.Duration(res.RetryAfter) * time.Second)
	}
	if err := s.CheckAdmin(header); err != nil {
		return err
	}
	s.adminFails.Refund(key, res)
	return nil
}

// CheckAdmin validates an Authorization header as the admin token; any
// failure is 401 UNAUTHORIZED. It is not throttled: requests use
// CheckAdminFrom.
func (s *Service) CheckAdmin(header string) error {
	tok, ok := ParseBearer(header)
	if !ok || !strings.HasPrefix(tok, adminPrefix) || len(tok) > 256 {
		return ErrUnauthorized
	}
	if s.adminToken != "" {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.adminToken)) == 1 {
			return nil
		}
		return ErrUnauthorized
	}
	h := s.keys.HashString(hashDomainAdm, tok)
	if len(s.adminHash) == store.HashSize && subtle.ConstantTimeCompare(h[:], s.adminHash) == 1 {
		return nil
	}
	return ErrUnauthorized
}

// Bootstrap is what a first start creates and prints once.
type Bootstrap struct {
	Project    *store.Project
	APIKey     string
	AdminToken string // empty when the admin token is configured
}

// Initialized reports whether first-start state exists (Init has run).
func (s *Service) Initialized(ctx context.Context) (bool, error) {
	var ok bool
	err := s.db.View(ctx, func(tx store.Tx) (err error) {
		ok, err = tx.Initialized()
		return err
	})
	return ok, err
}

// Init creates the first-start state in one transaction: the project
// "default" (allowed origins: the server's own, so the passkey demo page
// works, and http://localhost:3000; see firstOrigins), a test-mode key
// for it and, unless one is configured, the admin token; it marks the
// data file initialized, so a crash before the commit leaves nothing
// behind and the next start tries again. When another process sharing
// the store (a replica starting at the same time) initialized it first,
// Init creates nothing and returns a nil Bootstrap, having read the
// admin token hash that process stored.
func (s *Service) Init(ctx context.Context) (*Bootstrap, error) {
	name, origins := "default", s.firstOrigins()
	p, err := s.newProject(ProjectInput{Name: &name, AllowedOrigins: &origins})
	if err != nil {
		return nil, err
	}
	b := &Bootstrap{Project: p}
	var adminHash []byte
	if s.adminToken == "" {
		b.AdminToken = adminPrefix + randomString(base62, 40)
		h := s.keys.HashString(hashDomainAdm, b.AdminToken)
		adminHash = h[:]
	}
	k := &store.APIKey{ProjectID: p.ID, Mode: modeTest, CreatedAt: s.now().UTC()}
	var storedHash []byte
	done := false
	err = s.db.Update(ctx, func(tx store.Tx) error {
		done = false
		if ok, err := tx.Initialized(); err != nil {
			return err
		} else if ok {
			done = true
			storedHash, err = tx.AdminTokenHash()
			return err
		}
		if err := tx.PutProject(p); err != nil {
			return err
		}
		key, err := s.putNewKey(tx, k)
		if err != nil {
			return err
		}
		b.APIKey = key
		if adminHash != nil {
			if err := tx.SetAdminTokenHash(adminHash); err != nil {
				return err
			}
		}
		return tx.SetInitialized()
	})
	if err != nil {
		return nil, internal(err)
	}
	if done {
		s.adminHash = storedHash
		return nil, nil
	}
	if adminHash != nil {
		s.adminHash = adminHash
	}
	s.projectsChanged()
	return b, nil
}

// devOrigin is the first-start project's origin for an app in
// development.
const devOrigin = "http://localhost:3000"

// firstOrigins returns the first-start project's allowed origins: the
// base URL's origin and devOrigin. The base URL's comes first, so the
// relying party id (the first origin's host) is the server's own and the
// demo page served there can make passkeys; unless its host is an IP
// address other than loopback, which cannot be a relying party id: then
// it comes second and the id stays "localhost".
func (s *Service) firstOrigins() []string {
	base := s.baseOrigin()
	switch {
	case base == "" || base == devOrigin:
		return []string{devOrigin}
	case isIP(hostOfOrigin(base)) && !isLoopbackIP(hostOfOrigin(base)):
		return []string{devOrigin, base}
	}
	return []string{base, devOrigin}
}

// EnsureAdminToken makes sure an admin token exists. With a configured
// token, or a stored hash from an earlier start, it does nothing and
// returns "". Otherwise (the first start had LATCHKEY_ADMIN_TOKEN set,
// a later one has not) it generates a token, stores its keyed hash and
// returns it, to be shown once as on a first start. Call it at start,
// before serving (it sets the hash the admin check reads).
func (s *Service) EnsureAdminToken(ctx context.Context) (string, error) {
	if s.adminToken != "" || len(s.adminHash) > 0 {
		return "", nil
	}
	tok := adminPrefix + randomString(base62, 40)
	h := s.keys.HashString(hashDomainAdm, tok)
	var stored []byte
	err := s.db.Update(ctx, func(tx store.Tx) (err error) {
		// Another replica may have stored one since this one started.
		if stored, err = tx.AdminTokenHash(); err != nil || stored != nil {
			return err
		}
		return tx.SetAdminTokenHash(h[:])
	})
	if err != nil {
		return "", internal(err)
	}
	if stored != nil {
		s.adminHash = stored
		return "", nil
	}
	s.adminHash = h[:]
	return tok, nil
}

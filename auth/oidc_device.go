package auth

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// The device authorization grant of the projects' OpenID providers
// (RFC 8628; docs/oidc.md, "Device flow"), as op's storage and the use
// cases of the device page.
//
// A client with the device grant asks <issuer>/device_authorization for
// a device code (op's, 128 random bits, kept as a keyed hash) and a user
// code (eight letters of BCDFGHJKLMNPQRSTVWXZ, shown XXXX-XXXX); both
// live OIDCDeviceLifetime. The user enters the user code on
// <issuer>/device, signs in there if the browser has no session (the
// hosted sign-in, which then returns to the device page), and allows or
// denies the client the scopes it asked for. Allowing makes a session
// for the device, as a hosted sign-in does (method "oidc:<client
// name>", the browser session's proofs), which the device's tokens
// live under. Meanwhile the device polls the token endpoint: pending,
// slow_down when it polls faster than every OIDCDevicePollInterval (by
// the service's clock), access_denied, expired_token, or its tokens,
// once: the poll that takes them spends the device code.
//
// Wrong user codes are throttled per client address and per project
// (failures only, over a rolling minute, shared by replicas on
// PostgreSQL): a user code has 20^8 values and lives ten minutes.

// Paths and timings of the device flow.
const (
	// OIDCDevicePath is the device page, under an issuer.
	OIDCDevicePath = "/device"
	// OIDCDeviceLifetime is how long a device code and its user code
	// work.
	OIDCDeviceLifetime = 10 * time.Minute
	// OIDCDevicePollInterval is how often a device may poll.
	OIDCDevicePollInterval = 5 * time.Second
	// DeviceGuessesPerIP is how many wrong user codes one client
	// address (an IPv6 address: its /64) may enter per rolling minute.
	DeviceGuessesPerIP = 10
	// DeviceGuessesPerProject is how many wrong user codes a project's
	// device page takes per rolling minute, from all addresses.
	DeviceGuessesPerProject = 300
	// oidcDeviceDomain is the keyed-hash domain of device codes.
	oidcDeviceDomain = "oidc-device"
	// oidcDeviceSignInPrefix starts the id of an authorization request
	// made for the device page's sign-in (never answered with a code).
	oidcDeviceSignInPrefix = "device-"
	// userCodeChars are the letters of user codes: no vowels (no words),
	// none that look alike.
	userCodeChars = op.CharSetBase20
	// userCodeLen is the number of letters of a user code.
	userCodeLen = 8
)

// Refusals of the device page (shown on the page, never in JSON).
var (
	// ErrUserCodeInvalid: no pending device authorization has the code.
	ErrUserCodeInvalid = ErrInvalidCode.With("This code is not valid or has expired. Check the code your device shows and enter it again.")
	// errDeviceSignedOut: the browser's session may no longer answer
	// the device (signed out meanwhile, or a second factor now due).
	errDeviceSignedOut = ErrInvalidSession.With("Your sign-in has ended. Open the device page again and enter the code.")
	// ErrUserCodeThrottled: too many wrong codes from the address or
	// for the project within a minute.
	ErrUserCodeThrottled = newErr("RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many wrong codes; wait a minute and try again.")
)

// OIDCDeviceUserCode returns a user code typed by a person as
// user codes are stored ("BCDF-GHJK"): case, spaces and dashes do not
// matter. ok is false when it cannot be a user code.
func OIDCDeviceUserCode(typed string) (string, bool) {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToUpper(typed) {
		switch {
		case r == '-' || r == ' ':
		case strings.ContainsRune(userCodeChars, r) && n < userCodeLen:
			if n == userCodeLen/2 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			n++
		default:
			return "", false
		}
	}
	return b.String(), n == userCodeLen
}

// OIDCDeviceConfig is op's configuration of the device flow for a
// project's provider whose device page is userForm.
func OIDCDeviceConfig(userForm string) *op.DeviceAuthorizationConfig {
	return &op.DeviceAuthorizationConfig{Lifetime: OIDCDeviceLifetime, PollInterval: OIDCDevicePollInterval,
		UserFormURL: userForm, UserCode: op.UserCodeBase20}
}

// StoreDeviceAuthorization keeps a new device authorization of client
// clientID (op checked it has the device grant): the keyed hash of the
// device code, the user code, the scopes the client may ask for
// (requestScopes), pending, expiring OIDCDeviceLifetime from now by the
// service's clock (op's expiry, by the wall clock, is not used). A user
// code a live row holds is op.ErrDuplicateUserCode.
func (p *OIDCStorage) StoreDeviceAuthorization(ctx context.Context, clientID, deviceCode, userCode string, _ time.Time, scopes []string) error {
	h := p.s.keys.HashString(oidcDeviceDomain, deviceCode)
	return p.s.db.Update(ctx, func(tx store.Tx) error {
		c, err := tx.OIDCClient(p.projectID, clientID)
		if errors.Is(err, store.ErrNotFound) {
			return oidc.ErrInvalidClient().WithDescription("Unknown client.")
		} else if err != nil {
			return err
		}
		now := p.s.now().UTC()
		err = tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: p.projectID, Hash: h[:], UserCode: userCode,
			ClientID: c.ID, Scopes: requestScopes(c, scopes), State: store.DeviceAuthPending, CreatedAt: now,
			ExpiresAt: now.Add(OIDCDeviceLifetime)})
		if errors.Is(err, store.ErrConflict) {
			return op.ErrDuplicateUserCode
		}
		return err
	})
}

// errSlowDown is a poll sooner than OIDCDevicePollInterval after the
// last: op answers an error that wraps context.DeadlineExceeded with
// slow_down.
var _ op.DeviceAuthorizationStorage = (*OIDCStorage)(nil)

var errSlowDown = fmt.Errorf("polled sooner than every %s: %w", OIDCDevicePollInterval, context.DeadlineExceeded)

// GetDeviceAuthorizatonState (op's spelling) answers a device's poll
// with deviceCode, noting the poll's time (one transaction): slow_down
// when the last poll was less than OIDCDevicePollInterval ago (by the
// service's clock); expired_token once the codes expired or their
// tokens were taken; access_denied when the user denied it;
// invalid_grant when the code is unknown or another client's (op would
// say access_denied of any error: the refusal is noted for the HTTP
// layer, OIDCNotedRefusal); approved (op then makes the
// tokens, and the record is noted for them in the request's context);
// or pending.
func (p *OIDCStorage) GetDeviceAuthorizatonState(ctx context.Context, clientID, deviceCode string) (*op.DeviceAuthorizationState, error) {
	h := p.s.keys.HashString(oidcDeviceDomain, deviceCode)
	var d *store.OIDCDeviceAuth
	var last time.Time
	now := p.s.now().UTC()
	err := p.s.db.Update(ctx, func(tx store.Tx) (err error) {
		if d, err = tx.OIDCDeviceAuth(p.projectID, h[:]); err != nil {
			return err
		}
		if d.ClientID != clientID || !now.Before(d.ExpiresAt) || d.GrantID != "" {
			return nil
		}
		last, d.LastPollAt = d.LastPollAt, now
		return tx.PutOIDCDeviceAuth(d)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, noteRefusal(ctx, errDeviceUnknown)
	} else if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if d.ClientID != clientID {
		return nil, noteRefusal(ctx, errDeviceUnknown)
	}
	st := &op.DeviceAuthorizationState{ClientID: d.ClientID, Scopes: d.Scopes}
	switch {
	case !now.Before(d.ExpiresAt) || d.GrantID != "":
		return st, nil // expires in the past: expired_token
	case !last.IsZero() && now.Sub(last) < OIDCDevicePollInterval:
		return nil, errSlowDown
	case d.State == store.DeviceAuthDenied:
		st.Denied = true
	case d.State == store.DeviceAuthApproved:
		st.Done, st.Subject, st.AMR, st.AuthTime = true, d.UserID, d.AMR, d.AuthTime
		if sc := scratchOf(ctx); sc != nil {
			sc.device = d
		}
	default:
		// op compares with the wall clock: the time left, by the
		// service's.
		st.Expires = time.Now().Add(d.ExpiresAt.Sub(now))
	}
	return st, nil
}

// errDeviceUnknown refuses a device code that is not one of the
// client's (RFC 8628 section 3.5 and RFC 6749 section 5.2: an invalid
// grant, not the user's denial).
var errDeviceUnknown = oidc.ErrInvalidGrant().WithDescription("This device code is not known to this client.")

// errDeviceSpent refuses a second exchange of an approved device code
// (two polls at once).
var errDeviceSpent = oidc.ErrInvalidGrant().WithDescription("This device code was already used.")

// exchangeDevice makes the tokens of an approved device authorization
// (noted by GetDeviceAuthorizatonState), in one transaction: the
// device code is spent (GrantID), and a grant made as a code exchange
// makes it (exchangeCode), under the session the approval made, while
// that session lives.
func (p *OIDCStorage) exchangeDevice(ctx context.Context, withRefresh bool) (string, string, time.Time, error) {
	sc := scratchOf(ctx)
	if sc == nil || sc.device == nil {
		return "", "", time.Time{}, oidc.ErrInvalidGrant()
	}
	var g *store.OIDCGrant
	var c *store.OIDCClient
	var refresh string
	err := p.s.db.Update(ctx, func(tx store.Tx) error {
		g, refresh = nil, ""
		d, err := tx.OIDCDeviceAuth(p.projectID, sc.device.Hash)
		if errors.Is(err, store.ErrNotFound) {
			return oidc.ErrExpiredDeviceCode()
		} else if err != nil {
			return err
		}
		now := p.s.now().UTC()
		switch {
		case d.GrantID != "":
			return errDeviceSpent
		case !now.Before(d.ExpiresAt):
			return oidc.ErrExpiredDeviceCode()
		case d.State != store.DeviceAuthApproved:
			return oidc.ErrAuthorizationPending()
		}
		g, c, refresh, err = p.newGrant(tx, now, &store.OIDCGrant{ClientID: d.ClientID, UserID: d.UserID, SessionID: d.SessionID,
			Scopes: d.Scopes, AMR: d.AMR, ACR: d.ACR, AuthTime: d.AuthTime}, withRefresh)
		if err != nil {
			return err
		}
		d.GrantID = g.ID
		if err := tx.PutOIDCGrant(g); err != nil {
			return err
		}
		return tx.PutOIDCDeviceAuth(d)
	})
	if err != nil {
		return "", "", time.Time{}, oidcStoreError(err)
	}
	return p.grantTokens(ctx, g, c, refresh)
}

// OIDCDevice is a pending device authorization as the device page
// shows it.
type OIDCDevice struct {
	UserCode   string
	ClientID   string
	ClientName string
	Scopes     []string
}

// OIDCDeviceLookup returns projectID's pending device authorization
// whose user code is typed (OIDCDeviceUserCode), for a person at client
// address ip: ErrUserCodeInvalid when there is none (unknown, expired,
// answered); ErrUserCodeThrottled, whatever the code, once the address
// entered DeviceGuessesPerIP wrong codes within the rolling minute or
// the project took DeviceGuessesPerProject. Each lookup is counted
// before the code is read and refunded when it is found, so concurrent
// guesses cannot pass the limits either.
func (s *Service) OIDCDeviceLookup(ctx context.Context, projectID, typed, ip string) (*OIDCDevice, error) {
	ipk := "device-ip:" + ip
	if a, err := netip.ParseAddr(ip); err == nil {
		ipk = "device-ip:" + ipKey("", a).ip.String()
	}
	pk := "device-project:" + projectID
	byIP := s.adminFails.Allow(ipk, DeviceGuessesPerIP)
	if !byIP.Allowed {
		return nil, ErrUserCodeThrottled.WithRetry(time.Duration(byIP.RetryAfter) * time.Second)
	}
	byProject := s.adminFails.Allow(pk, DeviceGuessesPerProject)
	if !byProject.Allowed {
		s.adminFails.Refund(ipk, byIP)
		return nil, ErrUserCodeThrottled.WithRetry(time.Duration(byProject.RetryAfter) * time.Second)
	}
	d, err := s.pendingDevice(ctx, projectID, typed)
	if err != nil {
		return nil, err
	}
	s.adminFails.Refund(ipk, byIP)
	s.adminFails.Refund(pk, byProject)
	return d, nil
}

// pendingDevice returns projectID's pending device authorization whose
// user code is typed, with its client's name.
func (s *Service) pendingDevice(ctx context.Context, projectID, typed string) (*OIDCDevice, error) {
	code, ok := OIDCDeviceUserCode(typed)
	if !ok {
		return nil, ErrUserCodeInvalid
	}
	var out *OIDCDevice
	err := s.db.View(ctx, func(tx store.Tx) error {
		d, err := tx.OIDCDeviceAuthByUserCode(projectID, code)
		if err != nil {
			return err
		}
		if d.State != store.DeviceAuthPending || !s.now().Before(d.ExpiresAt) {
			return store.ErrNotFound
		}
		c, err := tx.OIDCClient(projectID, d.ClientID)
		if err != nil {
			return err
		}
		out = &OIDCDevice{UserCode: d.UserCode, ClientID: c.ID, ClientName: c.Name, Scopes: d.Scopes}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUserCodeInvalid
	} else if err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// OIDCDeviceSessionReady reports whether the browser's session pr (nil:
// none) may answer device d: a live session of the project with no
// second factor pending, and one proven when d's client requires it.
// When it may not, the page signs the browser in (OIDCDeviceSignIn).
func (s *Service) OIDCDeviceSessionReady(ctx context.Context, projectID string, d *OIDCDevice, pr *Principal) (bool, error) {
	if pr == nil {
		return false, nil
	}
	ready := false
	err := s.db.View(ctx, func(tx store.Tx) error {
		sess, c, err := s.deviceSession(tx, projectID, d.ClientID, pr)
		ready = err == nil && sess != nil && c != nil
		if errors.Is(err, errDeviceNotReady) {
			err = nil
		}
		return err
	})
	if err != nil {
		return false, internal(err)
	}
	return ready, nil
}

// errDeviceNotReady: the browser's session may not answer a device
// authorization (deviceSession).
var errDeviceNotReady = errors.New("the session may not answer the device")

// deviceSession returns pr's session and client clientID in tx when
// the session may answer a device authorization of the client:
// errDeviceNotReady when it may not (OIDCDeviceSessionReady).
func (s *Service) deviceSession(tx store.Tx, projectID, clientID string, pr *Principal) (*store.Session, *store.OIDCClient, error) {
	sess, en, err := tx.SessionEnrolled(pr.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errDeviceNotReady
	} else if err != nil {
		return nil, nil, err
	}
	if sess.UserID != pr.UserID || sess.ProjectID != projectID || !s.now().Before(sess.ExpiresAt) ||
		secondFactorPending(sess.Proofs, en) {
		return nil, nil, errDeviceNotReady
	}
	c, err := tx.OIDCClient(projectID, clientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errDeviceNotReady
	} else if err != nil {
		return nil, nil, err
	}
	if c.RequireMFA && !secondFactorProven(sess.Proofs) {
		return nil, nil, errDeviceNotReady
	}
	return sess, c, nil
}

// OIDCDeviceSignIn starts the hosted sign-in for device d's page: an
// authorization request of d's client (scope openid) that the sign-in
// pages take through their steps (single sign-on, second factor) and
// that then returns the browser to the device page with d's user code
// (OIDCDeviceReturn), never to the client with a code. It returns the
// request's id.
func (s *Service) OIDCDeviceSignIn(ctx context.Context, projectID string, d *OIDCDevice) (string, error) {
	now := s.now().UTC()
	r := &store.OIDCAuthRequest{ProjectID: projectID, ID: oidcDeviceSignInPrefix + newID(), ClientID: d.ClientID,
		RedirectURI: s.OIDCIssuer(projectID) + OIDCDevicePath + "?user_code=" + d.UserCode,
		Scopes:      []string{oidc.ScopeOpenID}, ResponseType: string(oidc.ResponseTypeCode), CreatedAt: now,
		ExpiresAt: now.Add(OIDCAuthRequestLifetime)}
	if err := s.db.Update(ctx, func(tx store.Tx) error { return tx.PutOIDCAuthRequest(r) }); err != nil {
		return "", internal(err)
	}
	return r.ID, nil
}

// isDeviceSignIn reports whether authorization request id is a device
// page's sign-in (OIDCDeviceSignIn).
func isDeviceSignIn(id string) bool { return strings.HasPrefix(id, oidcDeviceSignInPrefix) }

// OIDCDeviceReturn returns where the browser goes once request id's
// sign-in is done: the device page with its user code when id is a
// device page's sign-in (OIDCDeviceSignIn), "" for any other request
// (its code goes to its client).
func (s *Service) OIDCDeviceReturn(ctx context.Context, projectID, id string) string {
	if !isDeviceSignIn(id) {
		return ""
	}
	target := s.OIDCIssuer(projectID) + OIDCDevicePath
	_ = s.db.View(ctx, func(tx store.Tx) error {
		if r, err := tx.OIDCAuthRequest(projectID, id); err == nil && strings.HasPrefix(r.RedirectURI, target+"?") {
			target = r.RedirectURI
		}
		return nil
	})
	return target
}

// OIDCDeviceDecide answers the pending device authorization whose user
// code is typed with the browser's session pr, in one transaction:
// allowing makes a session for the device, as a hosted sign-in does
// (method "oidc:<client name>", pr's session's proofs, session.created),
// records the user's consent to a third-party client (the confirmation
// page was its consent page: oidc.consent_granted) and marks the
// authorization approved with it; denying marks it
// denied. ErrUserCodeInvalid when it is no longer pending; 401
// INVALID_SESSION when pr may not answer it (OIDCDeviceSessionReady).
func (s *Service) OIDCDeviceDecide(ctx context.Context, projectID, typed string, pr *Principal, allow bool, m Meta) error {
	code, ok := OIDCDeviceUserCode(typed)
	if !ok {
		return ErrUserCodeInvalid
	}
	if pr == nil {
		return errDeviceSignedOut
	}
	p, err := s.project(ctx, projectID)
	if err != nil {
		return err
	}
	err = s.db.Update(ctx, func(tx store.Tx) error {
		d, err := tx.OIDCDeviceAuthByUserCode(projectID, code)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserCodeInvalid
		} else if err != nil {
			return err
		}
		now := s.now().UTC()
		if d.State != store.DeviceAuthPending || !now.Before(d.ExpiresAt) {
			return ErrUserCodeInvalid
		}
		sess, c, err := s.deviceSession(tx, projectID, d.ClientID, pr)
		if errors.Is(err, errDeviceNotReady) {
			return errDeviceSignedOut
		} else if err != nil {
			return err
		}
		d.UserID = sess.UserID
		if !allow {
			d.State = store.DeviceAuthDenied
			return tx.PutOIDCDeviceAuth(d)
		}
		u, err := tx.User(sess.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return errDeviceSignedOut
		} else if err != nil {
			return err
		}
		if u.Disabled {
			return ErrUserDisabled
		}
		method := oidcMethodPrefix + c.Name
		ds := s.newSession(p, u, method)
		ds.Proofs = slices.Clone(sess.Proofs)
		ds.IP, ds.UserAgent = clipIP(m.IP), clipUA(m.UserAgent)
		if err := tx.PutSession(ds); err != nil {
			return err
		}
		if err := s.emit(tx, p.ID, "session.created", sessionCreated{Method: method, SessionID: ds.ID, UserID: u.ID}); err != nil {
			return err
		}
		if s.obs != nil {
			tx.OnCommit(func() { s.obs.Login("oidc") })
		}
		if !c.FirstParty {
			// The confirmation page was the consent page.
			if err := s.grantConsent(tx, projectID, u.ID, c, d.Scopes); err != nil {
				return err
			}
		}
		d.State, d.SessionID = store.DeviceAuthApproved, ds.ID
		d.AuthTime, d.AMR, d.ACR = lastProof(ds.Proofs), oidcAMR(ds.Proofs), ACRSingleFactor
		if secondFactorProven(ds.Proofs) {
			d.ACR = ACRMultiFactor
		}
		return tx.PutOIDCDeviceAuth(d)
	})
	var e *Error
	if errors.As(err, &e) {
		return e
	} else if err != nil {
		return internal(err)
	}
	return nil
}

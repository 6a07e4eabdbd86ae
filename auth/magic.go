package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"time"

	"latchkey/store"
)

// Magic link parameters: a link is single use and lives 15 minutes
// (docs/api.md, "Magic link").
const (
	MagicLifetime   = 15 * time.Minute
	codeKindMagic   = "magic"
	hashDomainMagic = "magic"
	// MagicPath is the verify path links point at.
	MagicPath = "/api/v1/magic/verify"
)

// errTooManyLinks is TOO_MANY_REQUESTS for a magic link: the send
// throttle's words name links, not codes.
var errTooManyLinks = ErrTooManyRequests.With("Too many sign-in links sent to this address; wait before asking again.")

// SendMagicLink emails a single-use sign-in link. redirectURL, when not
// empty, must have one of the project's allowed origins (400
// INVALID_REDIRECT_URL); other errors as SendOTP.
func (s *Service) SendMagicLink(ctx context.Context, p *store.Project, rawEmail, redirectURL string, m Meta) error {
	return s.sendMagicLink(ctx, p, rawEmail, redirectURL, func(token string) string {
		return s.baseURL + MagicPath + "?token=" + url.QueryEscape(token)
	}, m)
}

// sendMagicLink is SendMagicLink with the link made by linkTo from the
// link's token.
func (s *Service) sendMagicLink(ctx context.Context, p *store.Project, rawEmail, redirectURL string, linkTo func(token string) string, m Meta) error {
	a := s.attempt(ctx, p.ID, "magic_link", "send", m)
	email, err := NormalizeEmail(rawEmail)
	if err != nil {
		return a.reject(err)
	}
	a.email = email
	if redirectURL != "" && !CheckRedirect(redirectURL, p.AllowedOrigins) {
		return a.reject(ErrInvalidRedirect)
	}
	if err := s.checkRisk(p, m); err != nil {
		return a.reject(err)
	}
	raw := randomBytes(32)
	token := base64.RawURLEncoding.EncodeToString(raw)
	h := s.keys.HashString(hashDomainMagic, token)
	link := linkTo(token)
	says := store.MailContent{Project: p.Name, Link: link, TTLSeconds: int(MagicLifetime / time.Second)}
	return s.queueSend(a, p, codeKindMagic, says, func(tx store.Tx, now time.Time) error {
		return tx.PutMagicLink(&store.MagicLink{Hash: h[:], ProjectID: p.ID, Email: email, RedirectURL: redirectURL, CreatedAt: now, ExpiresAt: now.Add(MagicLifetime)})
	})
}

// MagicLinkProject returns the project of a pending link without using
// it (for the confirm page); 401 INVALID_TOKEN when unknown, used or
// expired.
func (s *Service) MagicLinkProject(ctx context.Context, token string) (*store.Project, error) {
	if token == "" {
		return nil, Invalid("token is required.")
	}
	h := s.keys.HashString(hashDomainMagic, token)
	var ml *store.MagicLink
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		ml, err = tx.MagicLink(h[:])
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && (ml.UsedAt != nil || !s.now().Before(ml.ExpiresAt))) {
		return nil, ErrInvalidToken
	} else if err != nil {
		return nil, internal(err)
	}
	return s.Project(ctx, ml.ProjectID)
}

// VerifyMagicLink consumes a link token and signs its user in. A
// redirectURI outside the project's allowed origins is 400
// INVALID_REDIRECT_URL and leaves the link unused. Unknown, used or
// expired tokens are 401 INVALID_TOKEN.
func (s *Service) VerifyMagicLink(ctx context.Context, token, redirectURI string, m Meta) (*Login, error) {
	return s.verifyMagicLink(ctx, token, redirectURI, "", loginAs{method: "magic_link"}, m)
}

// verifyMagicLink is VerifyMagicLink for a session as says; a link of
// another project than projectID (when set) is 401 INVALID_TOKEN and
// stays unused.
func (s *Service) verifyMagicLink(ctx context.Context, token, redirectURI, projectID string, as loginAs, m Meta) (*Login, error) {
	a := s.attempt(ctx, "", "magic_link", "verify", m)
	if token == "" {
		return nil, a.reject(Invalid("token is required."))
	}
	if len(token) > 512 {
		return nil, a.reject(ErrInvalidToken)
	}
	h := s.keys.HashString(hashDomainMagic, token)
	// An unknown token changes nothing: answer it from a read transaction,
	// so a flood of made-up tokens costs no write (and, past the
	// suppression rate, no event either). A known link names its project
	// and address: the velocity slot is reserved before the transaction
	// (which may run twice).
	p, email, err := s.pendingLink(ctx, h[:])
	if errors.Is(err, store.ErrNotFound) {
		return nil, a.reject(ErrInvalidToken)
	} else if err != nil {
		return nil, internal(err)
	}
	if p != nil {
		if err := a.reserveRisk(p, subject{email: email}); err != nil {
			// Refused before the transaction, which names them itself.
			a.projectID, a.email = p.ID, email
			return nil, a.reject(err)
		}
		defer a.release()
	}
	var login *Login
	err = a.batch(func(tx store.Tx) error {
		login = nil
		now := s.now()
		ml, err := tx.MagicLink(h[:])
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrInvalidToken)
		} else if err != nil {
			return err
		}
		a.email = ml.Email
		if projectID != "" && ml.ProjectID != projectID {
			return a.fail(tx, ErrInvalidToken)
		}
		p, err := tx.Project(ml.ProjectID)
		if errors.Is(err, store.ErrNotFound) { // the project was deleted
			return a.fail(tx, ErrInvalidToken)
		} else if err != nil {
			return err
		}
		a.projectID = p.ID
		if redirectURI != "" && !CheckRedirect(redirectURI, p.AllowedOrigins) {
			return a.fail(tx, ErrInvalidRedirect)
		}
		if ml.UsedAt != nil {
			return a.fail(tx, ErrLinkUsed)
		}
		if !now.Before(ml.ExpiresAt) {
			return a.fail(tx, ErrLinkExpired)
		}
		u, isNew, err := s.provenUser(tx, p, ml.Email)
		if err != nil {
			return err
		}
		if u.Disabled {
			return a.fail(tx, ErrUserDisabled)
		}
		used := now.UTC()
		ml.UsedAt = &used
		if err := tx.PutMagicLink(ml); err != nil {
			return err
		}
		as.newUser = isNew
		login, err = s.startLoginAs(tx, p, u, as, a.m)
		if err != nil {
			return err
		}
		login.IsNewUser = isNew
		login.RedirectURL = ml.RedirectURL
		a.userID = u.ID
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	return s.finish(login)
}

// pendingLink returns the project and address of the link with hash h,
// used or not: store.ErrNotFound for an unknown hash, a nil project when
// the link's project was deleted.
func (s *Service) pendingLink(ctx context.Context, h []byte) (*store.Project, string, error) {
	var ml *store.MagicLink
	if err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		ml, err = tx.MagicLink(h)
		return err
	}); err != nil {
		return nil, "", err
	}
	p, err := s.project(ctx, ml.ProjectID)
	if err != nil { // the project was deleted: the transaction answers
		return nil, "", nil
	}
	return p, ml.Email, nil
}

// withCategory returns a copy of e recorded under another category.
func (e *Error) withCategory(c string) *Error {
	x := *e
	x.Category = c
	return &x
}

package auth

import (
	"context"
	"time"

	"latchkey/store"
)

// The forward-auth cookie's own token. The cookie is set for the
// project's whole cookie domain, so every app under it (and its proxy,
// and whatever logs their requests) sees its value: it must not be a
// session token, which the API, the account page and the hosted pages'
// single sign-on take. It is a JWT of the same session (same signature,
// issuer, audience, expiry) marked "use":"forward-auth", which only the
// forward-auth check, forward-auth's sign-in pages and the sign-out take:
// whoever reads it can do what the cookie does (pass the project's
// proxies as the user until it expires or the session ends) and nothing
// more.

// forwardAuthUse marks a forward-auth cookie's token (claims.Use).
const forwardAuthUse = "forward-auth"

// ForwardAuthToken returns the forward-auth cookie's token of session
// pr (a live session of t's project): the session, the user and the
// expiry of pr, marked for forward-auth only.
func (s *Service) ForwardAuthToken(t *ForwardAuthTarget, pr *Principal) (string, error) {
	sess := &store.Session{ID: pr.SessionID, UserID: pr.UserID}
	tok, _, err := s.signTokenUse(t.Project, sess, time.Unix(pr.IssuedAt, 0), time.Unix(pr.ExpiresAt, 0), forwardAuthUse)
	return tok, internal(err)
}

// ForwardAuthBrowserSession checks a browser's forward-auth cookie on
// forward-auth's pages and the sign-out: a forward-auth token of
// projectID's (or a session token, as the cookie held before); 401
// INVALID_SESSION when it is not a live session of the project.
func (s *Service) ForwardAuthBrowserSession(ctx context.Context, projectID, cookie string) (*Principal, error) {
	pr, _, _, now, err := s.authenticateSession(ctx, "Bearer "+cookie)
	if err != nil {
		return nil, err
	}
	if pr.ProjectID != projectID {
		return nil, ErrInvalidSession
	}
	s.activity.seen(pr.SessionID, pr.IssuedAt, now)
	return pr, nil
}

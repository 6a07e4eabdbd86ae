package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// Logout at the providers (docs/oidc.md, "Signing out"): RP-initiated
// logout (OpenID Connect RP-Initiated Logout 1.0) at <issuer>/logout,
// which is also the forward-auth sign-out, and back-channel logout
// (OpenID Connect Back-Channel Logout 1.0). Every way a session ends
// (the end-session endpoint, POST /logout, DELETE /sessions/:id, the
// admin, account deletion or disabling, a reused refresh token) goes
// through revokeSession or revokeAll, which write, in the transaction
// that ends the session, one outbox event per client with a
// back-channel logout URI that was granted tokens under it. The webhook
// worker delivers them with the webhooks' retries; the logout token
// itself is signed at each attempt (BackchannelLogoutDelivery), so that
// a retried delivery never carries an expired token.

// OIDCLogoutPath is the end-session endpoint under an issuer, and the
// forward-auth sign-out (ForwardAuthLogoutPath).
const OIDCLogoutPath = ForwardAuthLogoutPath

// BackchannelLogoutEventURI is the event a logout token carries.
const BackchannelLogoutEventURI = "http://schemas.openid.net/event/backchannel-logout"

// logoutTokenLifetime is how long a logout token is accepted after it
// is signed (each delivery attempt signs a new one).
const logoutTokenLifetime = 2 * time.Minute

// queueBackchannelLogout writes, inside tx, a back-channel logout event
// (store.BackchannelLogoutEvent) for each client of projectID with a
// back-channel logout URI that holds a grant under session sessionID of
// userID; the webhook worker is woken once tx commits.
func (s *Service) queueBackchannelLogout(tx store.Tx, projectID, userID, sessionID string) error {
	grants, err := tx.OIDCSessionGrants(projectID, sessionID)
	if err != nil || len(grants) == 0 {
		return err
	}
	seen := map[string]bool{}
	for _, g := range grants {
		if seen[g.ClientID] {
			continue
		}
		seen[g.ClientID] = true
		c, err := tx.OIDCClient(projectID, g.ClientID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted: its grants died with it
		} else if err != nil {
			return err
		}
		if c.BackchannelLogoutURI == "" {
			continue
		}
		raw, err := json.Marshal(store.BackchannelLogout{ClientID: c.ID, UserID: userID, SessionID: sessionID})
		if err != nil {
			return err
		}
		e := &store.Event{ID: "evt_" + uuid.NewString(), ProjectID: projectID, Type: store.BackchannelLogoutEvent,
			CreatedAt: s.now().UTC(), Data: raw}
		if err := tx.AppendEvent(e); err != nil {
			return err
		}
		tx.OnCommit(s.wake)
	}
	return nil
}

// logoutTokenClaims are a back-channel logout token's claims.
type logoutTokenClaims struct {
	Issuer    string                    `json:"iss"`
	Audience  []string                  `json:"aud"`
	IssuedAt  int64                     `json:"iat"`
	Expiry    int64                     `json:"exp"`
	JTI       string                    `json:"jti"`
	Subject   string                    `json:"sub"`
	SessionID string                    `json:"sid"`
	Events    map[string]map[string]any `json:"events"`
}

// BackchannelLogoutDelivery prepares one delivery attempt of a
// back-channel logout event of projectID (data: its
// store.BackchannelLogout): the client's back-channel logout URI and the
// form to post there, logout_token=<JWT>. The token (typ logout+jwt) is
// signed now with the project's key of the client's ID token algorithm
// and carries iss, aud (the client), iat, exp (two minutes on), jti,
// sub, sid and the back-channel logout event, and no nonce.
// store.ErrNotFound means there is nothing to deliver any more: the
// project or the client is gone, or the client no longer has a
// back-channel logout URI.
func (s *Service) BackchannelLogoutDelivery(ctx context.Context, projectID string, data []byte) (target string, form []byte, err error) {
	var ev store.BackchannelLogout
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", nil, err
	}
	var c *store.OIDCClient
	err = s.db.View(ctx, func(tx store.Tx) (err error) {
		if _, err := tx.Project(projectID); err != nil {
			return err
		}
		c, err = tx.OIDCClient(projectID, ev.ClientID)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	if c.BackchannelLogoutURI == "" {
		return "", nil, store.ErrNotFound
	}
	set, err := s.OIDCKeys(ctx, projectID)
	if err != nil {
		return "", nil, err
	}
	alg := AlgRS256
	if c.IDTokenAlg == AlgES256 {
		alg = AlgES256
	}
	now := s.now()
	tok, err := signOIDC(set.Active[alg], "logout+jwt", logoutTokenClaims{
		Issuer: s.OIDCIssuer(projectID), Audience: []string{c.ID}, IssuedAt: now.Unix(),
		Expiry: now.Add(logoutTokenLifetime).Unix(), JTI: uuid.NewString(), Subject: ev.UserID, SessionID: ev.SessionID,
		Events: map[string]map[string]any{BackchannelLogoutEventURI: {}},
	})
	if err != nil {
		return "", nil, err
	}
	return c.BackchannelLogoutURI, []byte(url.Values{"logout_token": {tok}}.Encode()), nil
}

// EndSessionInput is an RP-initiated logout request's parameters.
type EndSessionInput struct {
	IDTokenHint, ClientID, PostLogoutRedirectURI, State string
}

// EndSession is a checked RP-initiated logout request.
type EndSession struct {
	// ClientID is the client that asked: the id_token_hint's, else
	// client_id; "" when neither says.
	ClientID string
	// HintUserID and HintSessionID are the user and session of a valid
	// id_token_hint (expired or not); "" without one.
	HintUserID, HintSessionID string
	// Redirect is where the browser goes once signed out: the client's
	// registered post_logout_redirect_uri with state added; "" for the
	// signed-out page. RedirectFor says whether it is followed.
	Redirect string
	// registered: the client registered itself (dynamic registration).
	registered bool
}

// RedirectFor returns where a browser that held the sessions browser
// (their ids) goes once signed out: Redirect, except for a client that
// registered itself, whose addresses anyone may have registered: its
// post_logout_redirect_uri is followed only when the id_token_hint names
// one of the browser's sessions (the client signed this browser in), so
// that the end-session endpoint never sends a stranger's browser to an
// address of the stranger's choosing.
func (es *EndSession) RedirectFor(browser []string) string {
	if es == nil || es.Redirect == "" {
		return ""
	}
	if es.registered && (es.HintSessionID == "" || !slices.Contains(browser, es.HintSessionID)) {
		return ""
	}
	return es.Redirect
}

// Any reports whether in has any of the RP-initiated logout parameters.
func (in EndSessionInput) Any() bool {
	return in.IDTokenHint != "" || in.ClientID != "" || in.PostLogoutRedirectURI != "" || in.State != ""
}

// maxEndSessionParam bounds each end-session parameter.
const maxEndSessionParam = 8192

// OIDCEndSessionRequest checks an RP-initiated logout request to
// projectID's provider: the id_token_hint (verified by v with the
// project's keys and issuer; an expired one is accepted, an access or
// logout token is not) names the client, which client_id must match;
// post_logout_redirect_uri must be one the client registered, exactly,
// and needs a client to be checked against. A refusal is 400
// VALIDATION_ERROR with a message for the error page; the browser is
// never sent anywhere then.
func (s *Service) OIDCEndSessionRequest(ctx context.Context, projectID string, v *op.IDTokenHintVerifier, in EndSessionInput) (*EndSession, error) {
	for _, p := range []string{in.IDTokenHint, in.ClientID, in.PostLogoutRedirectURI, in.State} {
		if len(p) > maxEndSessionParam {
			return nil, Invalid("The sign-out request is too long.")
		}
	}
	out := &EndSession{ClientID: in.ClientID}
	if in.IDTokenHint != "" {
		claims, err := op.VerifyIDTokenHint[*oidc.IDTokenClaims](ctx, in.IDTokenHint, v)
		if err != nil && !errors.As(err, &op.IDTokenHintExpiredError{}) || !idTokenType(in.IDTokenHint) {
			return nil, Invalid("The application sent a sign-out request with an ID token this service did not issue or cannot read.")
		}
		azp := claims.AuthorizedParty
		if azp == "" && len(claims.Audience) == 1 {
			azp = claims.Audience[0]
		}
		if in.ClientID != "" && in.ClientID != azp {
			return nil, Invalid("The sign-out request names another application than its ID token.")
		}
		out.ClientID, out.HintUserID, out.HintSessionID = azp, claims.Subject, claims.SessionID
	}
	var c *store.OIDCClient
	if out.ClientID != "" {
		err := s.db.View(ctx, func(tx store.Tx) (err error) {
			c, err = tx.OIDCClient(projectID, out.ClientID)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrUnknownClient
		} else if err != nil {
			return nil, internal(err)
		}
	}
	if in.PostLogoutRedirectURI != "" {
		if c == nil {
			return nil, Invalid("The sign-out request asks to return to an address without saying which application it is from.")
		}
		if !slices.Contains(c.PostLogoutRedirectURIs, in.PostLogoutRedirectURI) {
			return nil, ErrUnregisteredReturn
		}
		u, err := url.Parse(in.PostLogoutRedirectURI)
		if err != nil {
			return nil, ErrUnregisteredReturn
		}
		if in.State != "" {
			q := u.Query()
			q.Set("state", in.State)
			u.RawQuery = q.Encode()
		}
		out.Redirect, out.registered = u.String(), c.Registered
	}
	return out, nil
}

// idTokenType reports whether the JWS token's header says it is an ID
// token (typ JWT or none): an access token (at+jwt) or a logout token
// (logout+jwt) of the same provider is not a hint.
func idTokenType(token string) bool {
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var h struct {
		Typ string `json:"typ"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return false
	}
	return h.Typ == "" || strings.EqualFold(h.Typ, "JWT")
}

// EndedSession names a session to end: its user and id.
type EndedSession struct{ UserID, SessionID string }

// OIDCEndSessions ends the sessions of projectID that sessions name,
// in one transaction, the way every session ends (session.revoked,
// back-channel logout events, its tokens dead); a session that is gone
// already, or that is another project's or user's, is left alone.
func (s *Service) OIDCEndSessions(ctx context.Context, projectID string, sessions []EndedSession) error {
	if len(sessions) == 0 {
		return nil
	}
	err := s.db.Update(ctx, func(tx store.Tx) error {
		done := map[string]bool{}
		for _, e := range sessions {
			if e.SessionID == "" || done[e.SessionID] {
				continue
			}
			done[e.SessionID] = true
			sess, err := tx.Session(e.SessionID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if sess.ProjectID != projectID || sess.UserID != e.UserID {
				continue
			}
			if err := s.revokeSession(tx, sess); err != nil {
				return err
			}
		}
		return nil
	})
	return internal(err)
}

// OIDCLogoutFormToken returns the CSRF token of the sign-out
// confirmation form for browser (its CSRF cookie), bound to the
// request's parameters.
func (s *Service) OIDCLogoutFormToken(browser string, in EndSessionInput, rd string) string {
	return s.OIDCFormToken(browser, logoutFormID(in, rd))
}

// OIDCLogoutFormTokenValid reports whether token is the sign-out
// confirmation's CSRF token for browser and these parameters.
func (s *Service) OIDCLogoutFormTokenValid(browser string, in EndSessionInput, rd, token string) bool {
	return s.OIDCFormTokenValid(browser, logoutFormID(in, rd), token)
}

// logoutFormID is what a sign-out confirmation's CSRF token is bound to.
func logoutFormID(in EndSessionInput, rd string) string {
	return strings.Join([]string{"logout", in.IDTokenHint, in.ClientID, in.PostLogoutRedirectURI, in.State, rd}, "\x00")
}

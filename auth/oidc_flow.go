package auth

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// The authorization code flow of the projects' OpenID providers, as
// op's storage (docs/oidc.md): an authorization request is stored when
// the client sends the browser to /authorize, answered by a hosted
// sign-in (oidc_login.go), given a code, and the code is exchanged for
// a grant, an ID token and an access token.
//
// Codes are "<request id>.<256 random bits>", kept as a keyed hash on
// their request: they live OIDCCodeLifetime and are exchanged once; a
// code shown again after its exchange revokes the grant it gave, whose
// tokens then stop working. The request stays, as a tombstone that
// tells a replay, until oidcTombstone after its code expires.
//
// Access tokens are JWTs (RFC 9068, typ at+jwt) signed by the project's
// RS256 key, minted here rather than by op (whose JWTs say typ JWT);
// their jti is "<grant id>.<exp>.<random>", so that a token reaches its
// grant, and through it its session, with no row per token. A token
// works while its grant is neither revoked nor expired and its session
// lives: revoking the session (logout, DELETE /sessions/:id, the admin)
// ends every token issued under it.

// Lifetimes of the code flow.
const (
	// OIDCAuthRequestLifetime is how long an authorization request waits
	// for its sign-in.
	OIDCAuthRequestLifetime = 30 * time.Minute
	// OIDCCodeLifetime is how long an authorization code may be
	// exchanged.
	OIDCCodeLifetime = 60 * time.Second
	// oidcTombstone is how long a request is kept after its code
	// expired, to tell a replayed code from an unknown one.
	oidcTombstone = 10 * time.Minute
	// maxOIDCParam bounds state, nonce and login_hint (bytes).
	maxOIDCParam = 512
	// oidcCodeDomain is the keyed-hash domain of authorization codes.
	oidcCodeDomain = "oidc-code"
)

// acr values (docs/oidc.md): one factor, or a second factor proven.
const (
	ACRSingleFactor = "urn:latchkey:loa:1"
	ACRMultiFactor  = "urn:latchkey:loa:2"
)

// oidcScratch is what one HTTP request to a provider notes for later in
// the same request, where op's storage calls have no parameter for it.
type oidcScratch struct {
	// idTokenAlg is the algorithm of the client op asked for last
	// (GetClientByClientID), for SigningKey.
	idTokenAlg string
	// clientID is that client: at the token endpoint, the client that
	// authenticated, whose refresh tokens alone it may present
	// (TokenRequestByRefreshToken).
	clientID string
	// token is the token presented for introspection (OIDCNoteToken).
	token string
	// device is the approved device authorization a poll found
	// (GetDeviceAuthorizatonState), for its tokens and ID token.
	device *store.OIDCDeviceAuth
	// client is the client the request read last, user the user its
	// code exchange read, request the authorization request its
	// callback found live (oidc_memo.go).
	client  *store.OIDCClient
	user    *store.User
	request *store.OIDCAuthRequest
	// browser is the session of the browser's cookie at the
	// authorization endpoint (OIDCNoteBrowser), and answered the
	// request that session answered as it was stored, with its code
	// (single sign-on: CreateAuthRequest, oidcClient.LoginURL).
	browser  *Principal
	answered *ssoAnswer
	// exchanged is the id of the authorization request whose code the
	// request exchanged: op's DeleteAuthRequest that follows has nothing
	// to do.
	exchanged string
	// outage is set when a store call found the store out of reach or
	// could not commit (OIDCStoreOutage).
	outage atomic.Bool
	// refusal is the storage's refusal that op answers in words of its
	// own (OIDCNotedRefusal).
	refusal atomic.Pointer[oidc.Error]
}

type oidcScratchKey struct{}

// OIDCRequestContext returns ctx with room for what a provider's storage
// notes during one request (the client's ID token algorithm): the
// provider's handler calls it once per request.
func OIDCRequestContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oidcScratchKey{}, &oidcScratch{})
}

// scratchOf returns ctx's notes, nil outside OIDCRequestContext.
func scratchOf(ctx context.Context) *oidcScratch {
	sc, _ := ctx.Value(oidcScratchKey{}).(*oidcScratch)
	return sc
}

// oidcAuthRequest is a stored authorization request as op sees it
// (op.AuthRequest).
type oidcAuthRequest struct{ r *store.OIDCAuthRequest }

var _ op.AuthRequest = oidcAuthRequest{}

func (a oidcAuthRequest) GetID() string          { return a.r.ID }
func (a oidcAuthRequest) GetACR() string         { return a.r.ACR }
func (a oidcAuthRequest) GetAMR() []string       { return a.r.AMR }
func (a oidcAuthRequest) GetAudience() []string  { return []string{a.r.ClientID} }
func (a oidcAuthRequest) GetAuthTime() time.Time { return a.r.AuthTime }
func (a oidcAuthRequest) GetClientID() string    { return a.r.ClientID }
func (a oidcAuthRequest) GetNonce() string       { return a.r.Nonce }
func (a oidcAuthRequest) GetRedirectURI() string { return a.r.RedirectURI }
func (a oidcAuthRequest) GetResponseType() oidc.ResponseType {
	return oidc.ResponseType(a.r.ResponseType)
}
func (a oidcAuthRequest) GetResponseMode() oidc.ResponseMode {
	return oidc.ResponseMode(a.r.ResponseMode)
}
func (a oidcAuthRequest) GetScopes() []string { return a.r.Scopes }
func (a oidcAuthRequest) GetState() string    { return a.r.State }
func (a oidcAuthRequest) GetSubject() string  { return a.r.UserID }
func (a oidcAuthRequest) Done() bool          { return a.r.Done }
func (a oidcAuthRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.r.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.r.CodeChallenge, Method: oidc.CodeChallengeMethod(a.r.CodeChallengeMethod)}
}

// oidcText reports whether v may be kept as a parameter: at most
// maxOIDCParam bytes of UTF-8 text without NUL.
func oidcText(v string) bool {
	return len(v) <= maxOIDCParam && utf8.ValidString(v) && !strings.ContainsRune(v, 0)
}

// CreateAuthRequest stores an authorization request op has checked
// (client, redirect URI, response type), after latchkey's own rules;
// a refusal is an error redirect to the client. PKCE: S256 only (a
// challenge with another method, or none, is refused), required from
// public clients. state, nonce and login_hint are at most 512 bytes of
// text; response_mode is query or form_post. The scopes are those the
// client may ask for (requestScopes).
func (p *OIDCStorage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, hintSub string) (op.AuthRequest, error) {
	c, err := p.clientOf(ctx, req.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrInvalidRequestRedirectURI().WithDescription("Unknown client.")
	} else if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	r, err := newAuthRequest(p.projectID, req, c, hintSub, p.s.now().UTC())
	if err != nil {
		return nil, err
	}
	sc := scratchOf(ctx)
	if sc != nil && sc.browser != nil && sc.browser.ProjectID == p.projectID {
		return p.createAnswered(ctx, sc, r)
	}
	if err := p.s.db.Batch(ctx, func(tx store.Tx) error { return tx.PutOIDCAuthRequest(r) }); err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	return oidcAuthRequest{r}, nil
}

// ssoAnswer is an authorization request answered by the browser's
// session as it was stored: its id, and the client's redirect with its
// code.
type ssoAnswer struct{ id, location string }

// createAnswered stores request r of a browser with a session
// (sc.browser) in one transaction: answered by that session, with its
// code, when the session may serve it at once (OIDCContinue's rules:
// no new sign-in asked, no second factor or consent to give); as it
// came otherwise, and the sign-in page takes it from there, as for any
// request. An answered request is the one the sign-in page's single
// sign-on and the callback would have written (user, session, proofs;
// the code's keyed hash, exchangeable OIDCCodeLifetime), with no hop
// through either: the browser that holds the session is the one asking,
// which the callback's check (OIDCCallbackAllowed) makes sure of. Its
// redirect is noted for op's (oidcClient.LoginURL).
func (p *OIDCStorage) createAnswered(ctx context.Context, sc *oidcScratch, r *store.OIDCAuthRequest) (op.AuthRequest, error) {
	code, err := OIDCMinter{}.Encrypt(r.ID)
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	h := p.s.keys.HashString(oidcCodeDomain, code)
	var stored *store.OIDCAuthRequest
	err = p.s.db.Batch(ctx, func(tx store.Tx) error {
		a := *r
		stored = r
		step, _, err := p.s.answerWithSession(tx, &a, sc.browser, false)
		var refused *Error
		if errors.As(err, &refused) {
			// The sign-in page shows it (a second factor the
			// client requires and the user has none of).
			step, err = OIDCStepSignIn, nil
		}
		if err != nil {
			return err
		}
		if step == OIDCStepDone {
			withCode(&a, h, p.s.now())
			stored = &a
		}
		return tx.PutOIDCAuthRequest(stored)
	})
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if stored.Done {
		location, err := op.AuthResponseURL(stored.RedirectURI, oidc.ResponseType(stored.ResponseType), oidc.ResponseModeQuery,
			nil, codeAnswer{code: code, state: stored.State, issuer: p.s.OIDCIssuer(p.projectID)})
		if err != nil {
			return nil, err
		}
		sc.answered = &ssoAnswer{id: stored.ID, location: location}
	}
	return oidcAuthRequest{stored}, nil
}

// codeAnswer encodes the parameters of an authorization response with
// a code, as op's callback with the issuer's encoder does: code, state
// (when the request had one) and iss (RFC 9207).
type codeAnswer struct{ code, state, issuer string }

// Encode sets the answer's parameters in dst (src is unused).
func (a codeAnswer) Encode(_ any, dst map[string][]string) error {
	dst["code"] = []string{a.code}
	if a.state != "" {
		dst["state"] = []string{a.state}
	}
	dst["iss"] = []string{a.issuer}
	return nil
}

// OIDCNoteBrowser notes, for the authorization request ctx's request
// makes, the session pr of the browser's cookie (nil: none): a request
// that session may answer at once is answered as it is stored, and op's
// redirect goes to the client with the code rather than to the sign-in
// page (createAnswered).
func OIDCNoteBrowser(ctx context.Context, pr *Principal) {
	if sc := scratchOf(ctx); sc != nil {
		sc.browser = pr
	}
}

// newAuthRequest checks request req of client c by latchkey's rules
// (CreateAuthRequest) and returns the record to store, made at now.
func newAuthRequest(projectID string, req *oidc.AuthRequest, c *store.OIDCClient, hintSub string, now time.Time) (*store.OIDCAuthRequest, error) {
	switch {
	case req.CodeChallenge != "" && req.CodeChallengeMethod != oidc.CodeChallengeMethodS256:
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256.")
	case req.CodeChallenge == "" && c.Type == ClientPublic:
		return nil, oidc.ErrInvalidRequest().WithDescription("A public client must send a code_challenge (PKCE, method S256).")
	case req.CodeChallenge != "" && (len(req.CodeChallenge) < 43 || len(req.CodeChallenge) > 128 || !oidcText(req.CodeChallenge)):
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge must be 43 to 128 characters.")
	case req.ResponseMode != "" && req.ResponseMode != oidc.ResponseModeQuery && req.ResponseMode != oidc.ResponseModeFormPost:
		return nil, oidc.ErrInvalidRequest().WithDescription("response_mode must be query or form_post.")
	case !oidcText(req.State) || !oidcText(req.Nonce) || !oidcText(req.LoginHint):
		return nil, oidc.ErrInvalidRequest().WithDescription("state, nonce and login_hint must be text of at most 512 bytes.")
	case !oidcText(string(req.ResponseType)) || !oidcText(req.RedirectURI) ||
		slices.ContainsFunc(req.Prompt, func(v string) bool { return !oidcText(v) }):
		// Kept as text by both stores (PostgreSQL refuses bytes that are
		// not UTF-8): refused here rather than failing the write.
		return nil, oidc.ErrInvalidRequest().WithDescription("The request's parameters must be UTF-8 text.")
	}
	scopes := requestScopes(c, req.Scopes)
	var locales []string
	for _, t := range req.UILocales {
		locales = append(locales, t.String())
	}
	var maxAge *int64
	if req.MaxAge != nil {
		v := int64(*req.MaxAge)
		maxAge = &v
	}
	return &store.OIDCAuthRequest{ProjectID: projectID, ID: newID(), ClientID: c.ID, RedirectURI: req.RedirectURI,
		Scopes: scopes, State: req.State, Nonce: req.Nonce, ResponseType: string(req.ResponseType),
		ResponseMode: string(req.ResponseMode), CodeChallenge: req.CodeChallenge,
		CodeChallengeMethod: string(req.CodeChallengeMethod), Prompt: req.Prompt, MaxAge: maxAge,
		LoginHint: req.LoginHint, UILocales: locales, HintUserID: hintSub, CreatedAt: now,
		ExpiresAt: now.Add(OIDCAuthRequestLifetime)}, nil
}

// liveAuthRequest returns projectID's request id inside tx when it may
// still be answered: not expired, its code not exchanged.
func (s *Service) liveAuthRequest(tx store.Tx, projectID, id string) (*store.OIDCAuthRequest, error) {
	r, err := tx.OIDCAuthRequest(projectID, id)
	if err != nil {
		return nil, err
	}
	if !s.now().Before(r.ExpiresAt) || r.GrantID != "" {
		return nil, store.ErrNotFound
	}
	return r, nil
}

// AuthRequestByID returns a request that may still be answered (op's
// callback asks for it).
func (p *OIDCStorage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	if r := notedAuthRequest(ctx, p.projectID, id); r != nil {
		return oidcAuthRequest{r}, nil
	}
	var r *store.OIDCAuthRequest
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		r, err = p.s.liveAuthRequest(tx, p.projectID, id)
		return err
	})
	if err != nil {
		return nil, errors.New("unknown or expired authorization request")
	}
	return oidcAuthRequest{r}, nil
}

// SaveAuthCode keeps the keyed hash of the code op issues for request
// id: exchangeable for OIDCCodeLifetime. A second code for the same
// request (the callback reloaded) replaces the first.
func (p *OIDCStorage) SaveAuthCode(ctx context.Context, id, code string) error {
	h := p.s.keys.HashString(oidcCodeDomain, code)
	return p.s.db.Batch(ctx, func(tx store.Tx) error {
		r, err := p.s.liveAuthRequest(tx, p.projectID, id)
		if err != nil {
			return oidc.ErrServerError().WithDescription("The authorization request has expired.").WithParent(err)
		}
		withCode(r, h, p.s.now())
		return tx.PutOIDCAuthRequest(r)
	})
}

// withCode gives request r the code whose keyed hash is h, issued at
// now: exchangeable for OIDCCodeLifetime, the request kept oidcTombstone
// longer to tell a replay.
func withCode(r *store.OIDCAuthRequest, h [store.HashSize]byte, now time.Time) {
	r.CodeHash = h[:]
	r.CodeExpiresAt = now.UTC().Add(OIDCCodeLifetime)
	r.ExpiresAt = r.CodeExpiresAt.Add(oidcTombstone)
}

// errCodeReplayed refuses a code exchanged before; the grant it gave is
// revoked.
var errCodeReplayed = oidc.ErrInvalidGrant().WithDescription("This code was already used: the tokens it gave are revoked.")

// AuthRequestByCode returns the request code was issued for: the code
// must be its current one and unexpired. A code already exchanged
// revokes the grant it gave (RFC 6749, section 4.1.2) and is refused.
// The same read takes the request's client, which op asks for next
// (twice: the client, then its secret).
func (p *OIDCStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	id, _, ok := strings.Cut(code, ".")
	if !ok {
		return nil, errors.New("unknown code")
	}
	h := p.s.keys.HashString(oidcCodeDomain, code)
	var r *store.OIDCAuthRequest
	var c *store.OIDCClient
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		if r, err = tx.OIDCAuthRequest(p.projectID, id); err != nil {
			return err
		}
		if c, err = tx.OIDCClient(p.projectID, r.ClientID); errors.Is(err, store.ErrNotFound) {
			c, err = nil, nil // op's own ask for the client refuses it
		}
		return err
	})
	if err != nil || len(r.CodeHash) == 0 || !store.Equal(h[:], r.CodeHash) {
		return nil, errors.New("unknown code")
	}
	noteClient(ctx, c)
	if r.GrantID != "" {
		if err := p.s.revokeOIDCGrant(ctx, p.projectID, r.GrantID, "authorization code replayed"); err != nil {
			return nil, oidc.ErrServerError().WithParent(err)
		}
		return nil, errCodeReplayed
	}
	if !p.s.now().Before(r.CodeExpiresAt) || !r.Done {
		return nil, errors.New("expired code")
	}
	return oidcAuthRequest{r}, nil
}

// revokeOIDCGrant revokes projectID's grant id for reason (one
// transaction); a grant already revoked or gone stays so.
func (s *Service) revokeOIDCGrant(ctx context.Context, projectID, id, reason string) error {
	return s.db.Update(ctx, func(tx store.Tx) error {
		g, err := tx.OIDCGrant(projectID, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if !g.RevokedAt.IsZero() {
			return nil
		}
		g.RevokedAt, g.RevokedFor = s.now().UTC(), reason
		s.oidcTokensChanged(tx)
		return tx.PutOIDCGrant(g)
	})
}

// DeleteAuthRequest is op's call once a code's tokens are made: the
// request stays as the tombstone that tells a replay (the sweep deletes
// it); a request whose code was not exchanged goes. After this
// request's own exchange of the code (op's only call) there is nothing
// to do, and no transaction.
func (p *OIDCStorage) DeleteAuthRequest(ctx context.Context, id string) error {
	if sc := scratchOf(ctx); sc != nil && sc.exchanged == id {
		return nil
	}
	return p.s.db.Update(ctx, func(tx store.Tx) error {
		r, err := tx.OIDCAuthRequest(p.projectID, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && r.GrantID != "") {
			return nil
		} else if err != nil {
			return err
		}
		return tx.DeleteOIDCAuthRequest(p.projectID, id)
	})
}

// CreateAccessToken exchanges an authorization request's code, or an
// approved device code (exchangeDevice), for an access token alone
// (exchangeCode): op calls it when the request's scopes have no
// offline_access (or the client no refresh grant). For a
// client_credentials request it signs the client's token
// (mintClientToken).
func (p *OIDCStorage) CreateAccessToken(ctx context.Context, request op.TokenRequest) (string, time.Time, error) {
	if r, ok := request.(*oidcClientRequest); ok {
		return p.mintClientToken(ctx, r)
	}
	if _, ok := request.(*op.DeviceAuthorizationState); ok {
		at, _, exp, err := p.exchangeDevice(ctx, false)
		return at, exp, err
	}
	a, ok := request.(oidcAuthRequest)
	if !ok {
		return "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	at, _, exp, err := p.exchangeCode(ctx, a, false)
	return at, exp, err
}

// exchangeCode exchanges an authorization request's code, in one
// transaction (shared with other exchanges' under load: a group
// commit): the request is marked exchanged and its grant created,
// while the session it was signed in with lives; the user the ID token
// describes is read there too, for its claims. Without a refresh
// token the grant lives the client's access token lifetime; with one
// (withRefresh), the client's refresh token lifetime, never past the
// session's maximum, and its first refresh token is stored. The access
// token never outlives its grant. A code exchanged meanwhile (two
// exchanges at once) revokes the grant the other one made. It returns
// the signed access token as the token's "id" (the minter hands it back
// to op as is), the refresh token ("" without), and the access token's
// expiry by the wall clock, which op counts expires_in from.
func (p *OIDCStorage) exchangeCode(ctx context.Context, a oidcAuthRequest, withRefresh bool) (string, string, time.Time, error) {
	var g *store.OIDCGrant
	var c *store.OIDCClient
	var u *store.User
	var refresh string
	replayed := ""
	err := p.s.db.Batch(ctx, func(tx store.Tx) error {
		g, c, u, refresh, replayed = nil, nil, nil, "", ""
		r, err := tx.OIDCAuthRequest(p.projectID, a.r.ID)
		if errors.Is(err, store.ErrNotFound) {
			return oidc.ErrInvalidGrant().WithDescription("Unknown code.")
		} else if err != nil {
			return err
		}
		now := p.s.now().UTC()
		if r.GrantID != "" {
			replayed = r.GrantID
			return nil
		}
		if !now.Before(r.CodeExpiresAt) || !store.Equal(r.CodeHash, a.r.CodeHash) {
			return oidc.ErrInvalidGrant().WithDescription("The code has expired.")
		}
		g, c, refresh, err = p.newGrant(tx, now, &store.OIDCGrant{ClientID: r.ClientID, UserID: r.UserID, SessionID: r.SessionID,
			Scopes: r.Scopes, AMR: r.AMR, ACR: r.ACR, AuthTime: r.AuthTime}, withRefresh)
		if err != nil {
			return err
		}
		if u, err = tx.User(r.UserID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		r.GrantID = g.ID
		if err := tx.PutOIDCGrant(g); err != nil {
			return err
		}
		return tx.PutOIDCAuthRequest(r)
	})
	if err != nil {
		return "", "", time.Time{}, oidcStoreError(err)
	}
	if sc := scratchOf(ctx); sc != nil && replayed == "" {
		sc.exchanged, sc.user = a.r.ID, u
		noteClient(ctx, c)
	}
	if replayed != "" {
		if err := p.s.revokeOIDCGrant(ctx, p.projectID, replayed, "authorization code replayed"); err != nil {
			return "", "", time.Time{}, oidc.ErrServerError().WithParent(err)
		}
		return "", "", time.Time{}, errCodeReplayed
	}
	return p.grantTokens(ctx, g, c, refresh)
}

// newGrant makes, inside tx, the grant of a sign-in answered for a
// client (an authorization request's code, an approved device code):
// from's client, user, session, scopes and proofs, while that session
// lives (invalid_grant otherwise; invalid_client for a client gone).
// Without a refresh token (withRefresh false) the grant lives the
// client's access token lifetime; with one, the client's refresh token
// lifetime, never past the session's maximum, and its first refresh
// token is stored and returned.
func (p *OIDCStorage) newGrant(tx store.Tx, now time.Time, from *store.OIDCGrant, withRefresh bool) (*store.OIDCGrant, *store.OIDCClient, string, error) {
	sess, err := tx.Session(from.SessionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (sess.UserID != from.UserID || !now.Before(sess.ExpiresAt))) {
		return nil, nil, "", oidc.ErrInvalidGrant().WithDescription("The from-in session has ended.")
	} else if err != nil {
		return nil, nil, "", err
	}
	c, err := tx.OIDCClient(p.projectID, from.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, "", oidc.ErrInvalidClient()
	} else if err != nil {
		return nil, nil, "", err
	}
	atTTL := time.Duration(c.AccessTokenLifetimeSeconds) * time.Second
	g := &store.OIDCGrant{ProjectID: p.projectID, ID: newID(), ClientID: c.ID, UserID: from.UserID, SessionID: from.SessionID,
		Scopes: from.Scopes, AMR: from.AMR, ACR: from.ACR, AuthTime: from.AuthTime, CreatedAt: now, ExpiresAt: now.Add(atTTL)}
	refresh := ""
	if withRefresh {
		proj, err := tx.Project(p.projectID)
		if err != nil {
			return nil, nil, "", err
		}
		_, _, most := sessionTimes(proj)
		lifetime, _ := refreshTimes(c)
		g.ExpiresAt = earlier(now.Add(lifetime), sess.IssuedAt.Add(most))
		if refresh, err = p.s.newOIDCRefreshToken(tx, g, c, g.Scopes, now); err != nil {
			return nil, nil, "", err
		}
	}
	return g, c, refresh, nil
}

// grantTokens signs the access token of new grant g of client c, which
// never outlives the grant, and returns it with the grant's refresh
// token (as exchangeCode does).
func (p *OIDCStorage) grantTokens(ctx context.Context, g *store.OIDCGrant, c *store.OIDCClient, refresh string) (string, string, time.Time, error) {
	ttl := min(time.Duration(c.AccessTokenLifetimeSeconds)*time.Second, g.ExpiresAt.Sub(g.CreatedAt))
	at, exp, err := p.mintAccessToken(ctx, g, c, g.Scopes, ttl)
	if err != nil {
		return "", "", time.Time{}, err
	}
	return at, refresh, exp, nil
}

// oidcStoreError passes op's errors through and makes any other a
// server error.
func oidcStoreError(err error) error {
	var oe *oidc.Error
	if errors.As(err, &oe) {
		return oe
	}
	return oidc.ErrServerError().WithParent(err)
}

// mintAccessToken signs g's access token for scopes, living ttl, with
// the project's key of the client's algorithm (accessTokenKey). iat and exp are by the wall clock, as op
// stamps ID tokens and checks access tokens; the jti carries the expiry
// by the service's clock, which the checks of this package go by.
func (p *OIDCStorage) mintAccessToken(ctx context.Context, g *store.OIDCGrant, c *store.OIDCClient, scopes []string, ttl time.Duration) (string, time.Time, error) {
	set, err := p.s.OIDCKeys(ctx, p.projectID)
	if err != nil {
		return "", time.Time{}, oidc.ErrServerError().WithParent(err)
	}
	wall := time.Now()
	exp := wall.Add(ttl)
	claims := &accessTokenClaims{Issuer: p.s.OIDCIssuer(p.projectID), Subject: g.UserID, Audience: []string{c.ID},
		ClientID: c.ID, IssuedAt: wall.Unix(), Expiry: exp.Unix(),
		JTI:   g.ID + "." + strconv.FormatInt(p.s.now().Add(ttl).Unix(), 10) + "." + randomString(base62, 12),
		Scope: strings.Join(scopes, " "), AuthTime: g.AuthTime.Unix(), SessionID: g.SessionID, ACR: g.ACR, AMR: g.AMR}
	tok, err := signOIDC(accessTokenKey(set, c), "at+jwt", claims)
	if err != nil {
		return "", time.Time{}, oidc.ErrServerError().WithParent(err)
	}
	return tok, exp, nil
}

// accessTokenClaims are the claims of a grant's access token (RFC
// 9068), as mintAccessToken signs them: a struct rather than a map, which
// encoding/json writes without sorting keys or boxing values.
type accessTokenClaims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	Audience  []string `json:"aud"`
	ClientID  string   `json:"client_id"`
	IssuedAt  int64    `json:"iat"`
	Expiry    int64    `json:"exp"`
	JTI       string   `json:"jti"`
	Scope     string   `json:"scope"`
	AuthTime  int64    `json:"auth_time"`
	SessionID string   `json:"sid"`
	ACR       string   `json:"acr"`
	AMR       []string `json:"amr,omitempty"`
}

// parseJTI splits an access token's jti, "<grant id>.<exp>.<random>",
// into its grant id and expiry (unix seconds, by the service's clock);
// false for a string of another form.
func parseJTI(jti string) (string, time.Time, bool) {
	parts := strings.Split(jti, ".")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return "", time.Time{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || exp <= 0 {
		return "", time.Time{}, false
	}
	return parts[0], time.Unix(exp, 0), true
}

// accessGrant returns the live grant of a verified access token's jti
// and subject, and the token's expiry: the expiry in the jti not passed
// (the service's clock), the token not revoked (RFC 7009), the grant
// neither revoked nor expired, its session alive (from the store's
// session cache: no transaction for a session it knows). Any failure is
// the same refusal.
func (p *OIDCStorage) accessGrant(ctx context.Context, jti, subject string) (*store.OIDCGrant, time.Time, error) {
	refused := errors.New("invalid access token")
	gid, exp, ok := parseJTI(jti)
	now := p.s.now()
	if !ok || !now.Before(exp) || strings.HasPrefix(jti, ccPrefix) {
		return nil, time.Time{}, refused
	}
	var g *store.OIDCGrant
	revoked := false
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		if g, err = tx.OIDCGrant(p.projectID, gid); err != nil {
			return err
		}
		_, err = tx.OIDCRevokedToken(p.projectID, jti)
		if revoked = err == nil; errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil || revoked || g.UserID != subject || !g.RevokedAt.IsZero() || !now.Before(g.ExpiresAt) {
		return nil, time.Time{}, refused
	}
	st, err := p.s.db.SessionState(ctx, g.SessionID)
	if err != nil || st.UserID != g.UserID {
		return nil, time.Time{}, refused
	}
	return g, exp, nil
}

// SetUserinfoFromToken fills the user info of a verified access token
// (userinfo endpoint): refused when it was revoked or its grant or
// session is gone (accessGrant).
func (p *OIDCStorage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	g, _, err := p.accessGrant(ctx, tokenID, subject)
	if err != nil {
		return err
	}
	return p.fillUserinfo(ctx, info, g.UserID, g.ClientID, g.Scopes, "", "")
}

// SetUserinfoFromScopes adds nothing: op calls SetUserinfoFromRequest.
func (p *OIDCStorage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills an ID token's claims (of a code
// exchange, a device's or a refresh): the user's by scope, and sid and acr (op sets
// neither).
func (p *OIDCStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, request op.IDTokenRequest, scopes []string) error {
	var sid, acr string
	switch r := request.(type) {
	case oidcAuthRequest:
		sid, acr = r.r.SessionID, r.r.ACR
	case *oidcRefreshRequest:
		sid, acr = r.g.SessionID, r.g.ACR
	case *op.DeviceAuthorizationState:
		if sc := scratchOf(ctx); sc != nil && sc.device != nil {
			sid, acr = sc.device.SessionID, sc.device.ACR
		}
	}
	return p.fillUserinfo(ctx, info, request.GetSubject(), request.GetClientID(), scopes, sid, acr)
}

// fillUserinfo sets the claims of userID for scopes, as client
// clientID gets them: sub; email and email_verified (email); name,
// given_name and preferred_username (profile); groups (groups); the
// client's claims map, whatever the scopes (clientClaimValues); sid and
// acr when given.
func (p *OIDCStorage) fillUserinfo(ctx context.Context, info *oidc.UserInfo, userID, clientID string, scopes []string, sid, acr string) error {
	// After a code exchange, both are in the request's notes.
	u, c := p.notedUser(ctx, userID), p.notedClient(ctx, clientID)
	var err error
	if u == nil || c == nil {
		err = p.s.db.View(ctx, func(tx store.Tx) (err error) {
			if u, err = tx.User(userID); err != nil {
				return err
			}
			c, err = tx.OIDCClient(p.projectID, clientID)
			return err
		})
	}
	if err != nil || u.ProjectID != p.projectID {
		return errors.New("unknown user or client")
	}
	userinfoClaims(info, u, c, scopes, sid, acr)
	return nil
}

// userinfoClaims sets fillUserinfo's claims of user u for scopes, as
// client c gets them.
func userinfoClaims(info *oidc.UserInfo, u *store.User, c *store.OIDCClient, scopes []string, sid, acr string) {
	info.Subject = u.ID
	if slices.Contains(scopes, oidc.ScopeEmail) {
		info.Email, info.EmailVerified = u.Email, oidc.Bool(isVerified(u))
	}
	if slices.Contains(scopes, oidc.ScopeProfile) {
		info.Name, info.GivenName, info.PreferredUsername = u.FirstName, u.FirstName, u.Email
	}
	if slices.Contains(scopes, "groups") {
		info.AppendClaims("groups", orEmpty(u.Groups))
	}
	for name, v := range clientClaimValues(c, u) {
		info.AppendClaims(name, v)
	}
	if sid != "" {
		info.AppendClaims("sid", sid)
	}
	if acr != "" {
		info.AppendClaims("acr", acr)
	}
}

// clientClaimValues returns the claims c's claims map takes from u's
// metadata: for each claim "metadata.<key>", the value of that
// top-level key (any JSON value) when u's metadata has it and it is not
// null; the others are left out.
func clientClaimValues(c *store.OIDCClient, u *store.User) map[string]any {
	if len(c.Claims) == 0 || len(u.Metadata) == 0 {
		return nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(u.Metadata, &meta) != nil {
		return nil
	}
	out := map[string]any{}
	for name, src := range c.Claims {
		raw, ok := meta[strings.TrimPrefix(src, "metadata.")]
		if !ok || string(raw) == "null" {
			continue
		}
		out[name] = raw // as stored: a number keeps its digits
	}
	return out
}

// GetClientByClientID returns the project's client id (invalid_client
// when unknown) and notes its ID token algorithm for SigningKey.
func (p *OIDCStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := p.clientOf(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrInvalidClient().WithDescription("Unknown client.")
	} else if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if sc := scratchOf(ctx); sc != nil {
		sc.idTokenAlg, sc.clientID = c.IDTokenAlg, c.ID
	}
	return &oidcClient{c: c, issuer: p.s.OIDCIssuer(p.projectID), sc: scratchOf(ctx)}, nil
}

// AuthorizeClientIDSecret checks a confidential client's secret (keyed
// hash, constant-time compare).
func (p *OIDCStorage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	c, err := p.clientOf(ctx, id)
	if err != nil || !p.s.CheckClientSecret(c, secret) {
		// op answers some of these (the device endpoints')
		// unauthorized_client 400; RFC 6749 (section 5.2) says
		// invalid_client, 401 for HTTP Basic.
		noteRefusal(ctx, errClientAuth)
		return errors.New("invalid client credentials")
	}
	return nil
}

// errClientAuth is the refusal of a client whose id or secret is wrong.
var errClientAuth = oidc.ErrInvalidClient().WithDescription("The client's id or secret is wrong.")

// accessTokenKey is the key that signs client c's access tokens: the
// one of its idTokenAlg. RS256 is every resource server's (RFC 9068);
// a client that asks for ES256 ID tokens checks ES256 signatures, and
// an ES256 signature costs a fraction of an RSA one, the largest part
// of a code exchange.
func accessTokenKey(set *OIDCKeySet, c *store.OIDCClient) *OIDCSigningKey {
	if k := set.Active[c.IDTokenAlg]; k != nil {
		return k
	}
	return set.Active[AlgRS256]
}

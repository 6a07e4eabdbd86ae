package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"math/big"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey/store"
)

// claims are latchkey's JWT claims (docs/api.md, "User session tokens");
// aud is one string.
type claims struct {
	Iss string `json:"iss"`
	Aud string `json:"aud"`
	Sub string `json:"sub"`
	Sid string `json:"sid"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	// Use is "forward-auth" in a forward-auth cookie's token
	// (ForwardAuthToken), absent in every other.
	Use string `json:"use,omitempty"`
}

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.Exp, 0)), nil
}
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.Iat, 0)), nil
}
func (c *claims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *claims) GetIssuer() (string, error)              { return c.Iss, nil }
func (c *claims) GetSubject() (string, error)             { return c.Sub, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)  { return jwt.ClaimStrings{c.Aud}, nil }

// principal is the session token the claims make.
func (c *claims) principal() Principal {
	return Principal{SessionID: c.Sid, UserID: c.Sub, ProjectID: c.Aud, IssuedAt: c.Iat, ExpiresAt: c.Exp,
		ForwardAuth: c.Use == forwardAuthUse}
}

// Principal is a verified session token.
type Principal struct {
	SessionID string
	UserID    string
	ProjectID string
	IssuedAt  int64
	ExpiresAt int64
	// ForwardAuth: the token is a forward-auth cookie's
	// (ForwardAuthToken), which only forward-auth takes.
	ForwardAuth bool
}

// signer is a project's decrypted signing key, kept in memory.
type signer struct {
	kid  string
	priv *ecdsa.PrivateKey
}

func (s *Service) signerFor(p *store.Project) (*signer, error) {
	if v, ok := s.signers.Load(p.ID + "/" + p.SigningKeyID); ok {
		return v.(*signer), nil
	}
	der, err := s.keys.Open(p.SigningKey, []byte("jwt:"+p.ID))
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("project signing key is not ECDSA")
	}
	sg := &signer{kid: p.SigningKeyID, priv: priv}
	s.signers.Store(p.ID+"/"+p.SigningKeyID, sg)
	return sg, nil
}

// newSession builds a session row for u in p starting now, proven by
// its sign-in method then. The row lasts as long as the session may go
// unrefreshed (the project's idle time, within its maximum:
// sessionExpiry); its first token lives the token lifetime
// (signSession).
func (s *Service) newSession(p *store.Project, u *store.User, method string) *store.Session {
	now := s.now().UTC().Truncate(time.Second)
	return &store.Session{ID: newID(), UserID: u.ID, ProjectID: p.ID, Method: method,
		IssuedAt: now, ExpiresAt: sessionExpiry(p, now, now),
		Proofs: []store.Proof{{Method: signInAMR(method), At: now}}}
}

// signSession returns the ES256 JWT of a session's sign-in, and the
// Principal its verification gives: iat the session's IssuedAt, exp the
// project's token lifetime later (never past the row's ExpiresAt).
func (s *Service) signSession(p *store.Project, sess *store.Session) (string, Principal, error) {
	return s.signToken(p, sess, sess.IssuedAt, tokenExpiry(p, sess.IssuedAt, sess.ExpiresAt))
}

// signToken returns the ES256 JWT of session sess issued at iat and
// expiring at exp, and the Principal its verification gives.
func (s *Service) signToken(p *store.Project, sess *store.Session, iat, exp time.Time) (string, Principal, error) {
	return s.signTokenUse(p, sess, iat, exp, "")
}

// signTokenUse is signToken with the token's use claim ("" for a
// session token).
func (s *Service) signTokenUse(p *store.Project, sess *store.Session, iat, exp time.Time, use string) (string, Principal, error) {
	sg, err := s.signerFor(p)
	if err != nil {
		return "", Principal{}, err
	}
	c := &claims{
		Iss: s.baseURL, Aud: p.ID, Sub: sess.UserID, Sid: sess.ID,
		Iat: iat.Unix(), Exp: exp.Unix(), Use: use,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	t.Header["kid"] = sg.kid
	tok, err := t.SignedString(sg.priv)
	return tok, c.principal(), err
}

// AuthenticateSession checks a bearer header as a user JWT: ES256
// signature by the project's key, iss, aud, exp, and a live session row
// of the token's user. Any failure is 401 INVALID_SESSION. It notes the
// session as seen now, in memory (FlushLastSeen writes it later, off the
// request path), and does not count the call against the per-session
// limit: an app checks its user's session on every request of its own,
// so the reads (GET /session, GET /me, GET /user...) are never limited
// per session. On a cached token and a session the store knows, it
// writes nothing shared and takes no lock that all sessions share.
func (s *Service) AuthenticateSession(ctx context.Context, header string) (*Principal, error) {
	pr, _, _, now, err := s.authenticateSession(ctx, header)
	if err != nil {
		return nil, err
	}
	if pr.ForwardAuth {
		return nil, ErrInvalidSession
	}
	s.activity.seen(pr.SessionID, pr.IssuedAt, now)
	return pr, nil
}

// AuthenticateSessionProofs is AuthenticateSession that also returns how
// the session was proven, as GET /session shows it: from the session row
// the check read (from the store's memory for a session it knows), with
// no read of its own.
func (s *Service) AuthenticateSessionProofs(ctx context.Context, header string) (*Principal, SessionProofs, error) {
	pr, _, st, now, err := s.authenticateSession(ctx, header)
	if err != nil {
		return nil, SessionProofs{}, err
	}
	if pr.ForwardAuth {
		return nil, SessionProofs{}, ErrInvalidSession
	}
	s.activity.seen(pr.SessionID, pr.IssuedAt, now)
	return pr, SessionProofs{AMR: amrOf(st.Proofs),
		SecondFactorPending: secondFactorPending(st.Proofs, store.Enrolled{TOTP: st.TOTP, SMS: st.SMS})}, nil
}

// AuthenticateSessionWrite is AuthenticateSession for the calls that
// write or start a ceremony: it also counts the call against the
// project's per-session limit (sessionRateLimitPerMinute calls per
// rolling minute, 120 by default; past it 429 RATE_LIMIT_EXCEEDED with a
// retry time). A refused call is not counted.
func (s *Service) AuthenticateSessionWrite(ctx context.Context, header string) (*Principal, error) {
	pr, p, _, now, err := s.authenticateSession(ctx, header)
	if err != nil {
		return nil, err
	}
	if pr.ForwardAuth {
		return nil, ErrInvalidSession
	}
	if err := s.countWrite(pr, p, now); err != nil {
		return nil, err
	}
	return pr, nil
}

// authenticateSession is the check they share; it returns the token's
// principal, its project, its session's state (shared with the store's
// cache: never changed) and the unix second it was checked at. It takes
// a forward-auth cookie's token too (pr.ForwardAuth), which every caller
// but forward-auth's must refuse.
func (s *Service) authenticateSession(ctx context.Context, header string) (*Principal, *store.Project, *store.SessionState, int64, error) {
	tok, ok := ParseBearer(header)
	if !ok {
		return nil, nil, nil, 0, ErrInvalidSession
	}
	return s.authenticateToken(ctx, tok)
}

// authenticateToken is authenticateSession's check of the token itself
// (a bearer header's, or a cookie's: trimmed, not empty).
func (s *Service) authenticateToken(ctx context.Context, tok string) (*Principal, *store.Project, *store.SessionState, int64, error) {
	if len(tok) > 4096 {
		return nil, nil, nil, 0, ErrInvalidSession
	}
	now := s.now().Unix()
	var p *store.Project
	pr, ok := s.tokens.get(tok)
	if ok {
		// The project may have been deleted since the token was cached
		// (its session rows outlive it); an uncached token would fail
		// verification, so the cached one must too.
		var err error
		if p, err = s.project(ctx, pr.ProjectID); err != nil {
			s.tokens.drop(tok)
			return nil, nil, nil, 0, ErrInvalidSession.Because(err)
		}
	} else {
		var err error
		pr, p, err = s.verifyToken(ctx, tok)
		if err != nil {
			return nil, nil, nil, 0, ErrInvalidSession.Because(err)
		}
		s.tokens.put(tok, pr)
	}
	if now >= pr.ExpiresAt {
		s.tokens.drop(tok)
		return nil, nil, nil, 0, ErrInvalidSession
	}
	// The session row, from the store's memory for a session it knows
	// (no transaction): its proofs are GET /session's answer.
	st, err := s.db.SessionState(ctx, pr.SessionID)
	if err != nil || st.UserID != pr.UserID {
		return nil, nil, nil, 0, s.sessionRefused(tok, err)
	}
	return &pr, p, st, now, nil
}

// sessionRefused is the answer to token tok whose session row the store
// did not give (err) or gave for another user.
func (s *Service) sessionRefused(tok string, err error) error {
	switch {
	case err == nil || errors.Is(err, store.ErrNotFound):
		// Logged out, deleted or disabled: the row is gone, so the
		// cached verification is dead too.
		s.tokens.drop(tok)
		return ErrInvalidSession
	case errors.Is(err, store.ErrUnavailable):
		return internal(err) // 503: the database, not the token
	}
	return ErrInvalidSession.Because(err)
}

// verifyToken does the full cryptographic check of a token and returns
// its principal and project.
func (s *Service) verifyToken(ctx context.Context, tok string) (Principal, *store.Project, error) {
	var c claims
	var p *store.Project
	_, err := jwt.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		if c.Aud == "" {
			return nil, errors.New("no audience")
		}
		var err error
		p, err = s.project(ctx, c.Aud)
		if err != nil {
			return nil, err
		}
		if kid, _ := t.Header["kid"].(string); kid != p.SigningKeyID {
			return nil, errors.New("unknown kid")
		}
		return s.publicKey(p)
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(s.baseURL),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.now))
	if err != nil {
		return Principal{}, nil, err
	}
	if c.Sid == "" || c.Sub == "" {
		return Principal{}, nil, errors.New("missing sid or sub")
	}
	return c.principal(), p, nil
}

func (s *Service) publicKey(p *store.Project) (*ecdsa.PublicKey, error) {
	id := p.ID + "/" + p.SigningKeyID
	if v, ok := s.publicKeys.Load(id); ok {
		return v.(*ecdsa.PublicKey), nil
	}
	k, err := x509.ParsePKIXPublicKey(p.PublicKey)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("project public key is not ECDSA")
	}
	s.publicKeys.Store(id, pub)
	return pub, nil
}

// JWK is one public key of a JWKS document.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// JWKS returns the public keys that verify projectID's session tokens.
func (s *Service) JWKS(ctx context.Context, projectID string) ([]JWK, error) {
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return nil, err
	}
	pub, err := s.publicKey(p)
	if err != nil {
		return nil, internal(err)
	}
	return []JWK{{Kty: "EC", Crv: "P-256", X: b64coord(pub.X), Y: b64coord(pub.Y), Kid: p.SigningKeyID, Use: "sig", Alg: "ES256"}}, nil
}

func b64coord(n *big.Int) string {
	b := make([]byte, 32)
	n.FillBytes(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// revokeAll deletes every session of u inside tx, emits a
// session.revoked event for each and queues the back-channel logouts of
// their OpenID clients.
func (s *Service) revokeAll(tx store.Tx, u *store.User) error {
	ids, err := tx.UserSessions(u.ID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.queueBackchannelLogout(tx, u.ProjectID, u.ID, id); err != nil {
			return err
		}
		if err := s.emit(tx, u.ProjectID, "session.revoked", map[string]string{"user_id": u.ID, "session_id": id}); err != nil {
			return err
		}
	}
	return tx.DeleteUserSessions(u.ID)
}

// tokenCache remembers verified tokens so the ES256 check runs once per
// token; the session row is still checked on every call, so logout,
// deletion and disabling take effect at once, and a token whose row is
// gone is dropped from the cache on its next use. Bounded. A lookup
// takes no lock and writes nothing (a token checked from many
// connections at once shares nothing but its entry); adding and
// dropping lock one of 32 shards.
type tokenCache struct {
	shards [32]tokenShard
	max    int
}

type tokenShard struct {
	m  sync.Map   // token → Principal
	mu sync.Mutex // adding and dropping entries
	n  int        // entries, under mu
	_  [40]byte   // keep shards on separate cache lines
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max / 32}
}

func (c *tokenCache) shard(tok string) *tokenShard {
	// FNV-1a over the last bytes: the signature, which is random.
	h := uint32(2166136261)
	for i := max(0, len(tok)-16); i < len(tok); i++ {
		h = (h ^ uint32(tok[i])) * 16777619
	}
	return &c.shards[h%32]
}

func (c *tokenCache) get(tok string) (Principal, bool) {
	if v, ok := c.shard(tok).m.Load(tok); ok {
		return v.(Principal), true
	}
	return Principal{}, false
}

func (c *tokenCache) drop(tok string) {
	sh := c.shard(tok)
	sh.mu.Lock()
	if _, ok := sh.m.LoadAndDelete(tok); ok {
		sh.n--
	}
	sh.mu.Unlock()
}

// cached reports whether tok is in the cache (for tests).
func (c *tokenCache) cached(tok string) bool {
	_, ok := c.get(tok)
	return ok
}

func (c *tokenCache) put(tok string, p Principal) {
	sh := c.shard(tok)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m.Load(tok); ok {
		sh.m.Store(tok, p)
		return
	}
	if sh.n >= c.max {
		sh.m.Range(func(k, _ any) bool { // evict an arbitrary entry
			sh.m.Delete(k)
			sh.n--
			return false
		})
	}
	sh.m.Store(tok, p)
	sh.n++
}

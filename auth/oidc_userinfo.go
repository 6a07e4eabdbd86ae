package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// The providers' userinfo endpoint (docs/performance.md, "Userinfo"):
// a relying party may call it on every request of its own, so a repeat
// call with the same access token is a map lookup plus the session
// check, as GET /session is. Two things are remembered per token, under
// a keyed hash of the token string (HMAC-SHA256 with a key made at start
// and never stored: the token itself is not kept):
//
//   - its verification (signature, issuer, expiry: op's own
//     VerifyAccessToken), a fact about the token that lasts until it
//     expires: the keys that sign access tokens stay published longer
//     (OIDCKeyPublishedFor) than any access token lives;
//   - the last full check's answer (the grant live, the token not
//     revoked, the user and the client read, the claims encoded),
//     stamped with the session state it went with (the store's shared
//     *store.SessionState: a new one whenever the session or its user
//     changes, on this replica at once and on the others through the
//     invalidation feed), the generation of this replica's grant and
//     client changes, and its time. It answers again while the store
//     gives the same session state, no grant, token or client change
//     committed here since, and it is younger than userinfoRecheck,
//     which bounds how late another replica's revocation of the token
//     or its grant, or its change of the client, is seen.
//
// So an ended session (logout, revocation, a deleted or disabled user)
// and a change of the user are seen at once here and within the feed's
// delay elsewhere; a revoked token or grant, a deleted or changed client
// at once here and within userinfoRecheck elsewhere.

// userinfoRecheck is how long a full check's answer serves before the
// store is read again (bounds what another replica's token, grant or
// client change takes to show).
const userinfoRecheck = 500 * time.Millisecond

// userinfoCacheSize bounds the access tokens remembered.
const userinfoCacheSize = 1 << 16

const userinfoShards = 32

// userinfoCache is the access tokens remembered, by keyed hash.
type userinfoCache struct {
	key      [32]byte
	perShard int
	hashes   sync.Pool // of *userinfoHash
	// gen counts this replica's committed changes that end or change a
	// token's answer besides its session: a grant revoked or its scopes
	// narrowed, a token revoked, a client changed or deleted.
	gen    atomic.Uint64
	shards [userinfoShards]userinfoShard
}

// userinfoShard is a shard of userinfoCache: hash → *userinfoEntry.
type userinfoShard struct {
	m  sync.Map
	mu sync.Mutex // adding and dropping entries
	n  int        // entries, under mu
	_  [40]byte   // keep shards on separate cache lines
}

// userinfoHash is a reusable HMAC of the cache's key.
type userinfoHash struct {
	mac interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
		Reset()
	}
	buf []byte
}

// userinfoEntry is a verified access token of a project.
type userinfoEntry struct {
	projectID, jti, subject, sessionID string
	// exp is the expiry the jti carries (the service's clock), wallExp
	// the token's exp claim (the wall clock, as op checks it).
	exp, wallExp time.Time
	answer       atomic.Pointer[userinfoAnswer]
}

// userinfoAnswer is a full check's answer and what it held under.
type userinfoAnswer struct {
	body  []byte
	state *store.SessionState
	gen   uint64
	at    time.Time
}

func newUserinfoCache(size int) *userinfoCache {
	c := &userinfoCache{perShard: max(1, size/userinfoShards)}
	if _, err := rand.Read(c.key[:]); err != nil {
		panic(err)
	}
	c.hashes.New = func() any {
		return &userinfoHash{mac: hmac.New(sha256.New, c.key[:]), buf: make([]byte, 0, sha256.Size)}
	}
	return c
}

// sum returns the keyed hash of tok.
func (c *userinfoCache) sum(tok string) [sha256.Size]byte {
	h := c.hashes.Get().(*userinfoHash)
	h.mac.Reset()
	h.mac.Write([]byte(tok))
	var k [sha256.Size]byte
	copy(k[:], h.mac.Sum(h.buf[:0]))
	c.hashes.Put(h)
	return k
}

func (c *userinfoCache) shard(k [sha256.Size]byte) *userinfoShard {
	return &c.shards[k[0]%userinfoShards]
}

func (c *userinfoCache) get(k [sha256.Size]byte) *userinfoEntry {
	if v, ok := c.shard(k).m.Load(k); ok {
		return v.(*userinfoEntry)
	}
	return nil
}

func (c *userinfoCache) put(k [sha256.Size]byte, e *userinfoEntry) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, loaded := sh.m.Swap(k, e); loaded {
		return
	}
	sh.n++
	if sh.n <= c.perShard {
		return
	}
	sh.m.Range(func(key, _ any) bool { // evict an arbitrary other entry
		if key.([sha256.Size]byte) == k {
			return true
		}
		sh.m.Delete(key)
		sh.n--
		return false
	})
}

func (c *userinfoCache) drop(k [sha256.Size]byte) {
	sh := c.shard(k)
	sh.mu.Lock()
	if _, ok := sh.m.LoadAndDelete(k); ok {
		sh.n--
	}
	sh.mu.Unlock()
}

// oidcTokensChanged voids every remembered userinfo answer once tx
// commits: tx revokes a grant or an access token, changes a grant's
// scopes, or changes or deletes a client.
func (s *Service) oidcTokensChanged(tx store.Tx) {
	tx.OnCommit(func() { s.userinfo.gen.Add(1) })
}

// errUserinfoRefused is every refusal of a userinfo call: the endpoint
// answers 401 invalid_token whatever the reason.
var errUserinfoRefused = errors.New("invalid access token")

// Userinfo answers the userinfo endpoint for access token tok (OpenID
// Connect Core 5.3): the JSON of the user's claims by the grant's
// scopes, as SetUserinfoFromToken fills them, and true. verifier gives
// what verifies a token not seen before (the provider's
// AccessTokenVerifier). Any
// refusal (a token that does not verify, expired, revoked, its grant
// or session ended, its user or client gone) is false and no error; a
// store failure is an error (ErrUnavailable or INTERNAL_ERROR).
func (p *OIDCStorage) Userinfo(ctx context.Context, tok string, verifier func() *op.AccessTokenVerifier) ([]byte, bool, error) {
	body, err := p.userinfo(ctx, tok, verifier)
	if errors.Is(err, errUserinfoRefused) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	return body, true, nil
}

// userinfo is Userinfo, a refusal errUserinfoRefused.
func (p *OIDCStorage) userinfo(ctx context.Context, tok string, verifier func() *op.AccessTokenVerifier) ([]byte, error) {
	if tok == "" || len(tok) > 8192 {
		return nil, errUserinfoRefused
	}
	c := p.s.userinfo
	k := c.sum(tok)
	e := c.get(k)
	if e == nil || e.projectID != p.projectID {
		claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, tok, verifier())
		if err != nil {
			return nil, errUserinfoRefused
		}
		_, exp, ok := parseJTI(claims.JWTID)
		sid, _ := claims.Claims["sid"].(string)
		if !ok || strings.HasPrefix(claims.JWTID, ccPrefix) || sid == "" {
			return nil, errUserinfoRefused
		}
		e = &userinfoEntry{projectID: p.projectID, jti: claims.JWTID, subject: claims.Subject, sessionID: sid,
			exp: exp, wallExp: claims.Expiration.AsTime()}
		c.put(k, e)
	}
	now := p.s.now()
	if !now.Before(e.exp) || !time.Now().Before(e.wallExp) {
		c.drop(k)
		return nil, errUserinfoRefused
	}
	st, err := p.s.db.SessionState(ctx, e.sessionID)
	if err != nil || st.UserID != e.subject {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, internal(err)
		}
		c.drop(k)
		return nil, errUserinfoRefused
	}
	if a := e.answer.Load(); a != nil && a.state == st && a.gen == c.gen.Load() && !now.Before(a.at) && now.Sub(a.at) < userinfoRecheck {
		return a.body, nil
	}
	// The full check: the generation before the store is read, the
	// session's state (st) before the user is.
	gen := c.gen.Load()
	body, err := p.userinfoBody(ctx, e, now)
	if err != nil {
		if errors.Is(err, errUserinfoRefused) {
			c.drop(k)
		}
		return nil, err
	}
	e.answer.Store(&userinfoAnswer{body: body, state: st, gen: gen, at: now})
	return body, nil
}

// userinfoBody reads what token e's answer needs in one transaction
// (its grant, whether it was revoked, the user, the client) and
// encodes the claims: accessGrant's checks and fillUserinfo's claims.
func (p *OIDCStorage) userinfoBody(ctx context.Context, e *userinfoEntry, now time.Time) ([]byte, error) {
	gid, _, _ := parseJTI(e.jti)
	var g *store.OIDCGrant
	var u *store.User
	var cl *store.OIDCClient
	revoked := false
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		if g, err = tx.OIDCGrant(p.projectID, gid); err != nil {
			return err
		}
		if _, err = tx.OIDCRevokedToken(p.projectID, e.jti); err == nil {
			revoked = true
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if u, err = tx.User(g.UserID); err != nil {
			return err
		}
		cl, err = tx.OIDCClient(p.projectID, g.ClientID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUserinfoRefused
	} else if err != nil {
		return nil, internal(err)
	}
	if revoked || g.UserID != e.subject || g.SessionID != e.sessionID || !g.RevokedAt.IsZero() || !now.Before(g.ExpiresAt) ||
		u.ProjectID != p.projectID {
		return nil, errUserinfoRefused
	}
	info := &oidc.UserInfo{}
	userinfoClaims(info, u, cl, g.Scopes, "", "")
	body, err := json.Marshal(info)
	if err != nil {
		return nil, internal(err)
	}
	return append(body, '\n'), nil // as op's encoder writes it
}

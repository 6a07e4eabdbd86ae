package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"latchkey/store"
)

// API key format (docs/api.md, "API keys"): "sk_live_" or "sk_test_", an
// 8-character lookup id, "_", a 32-character secret; base62.
const (
	LivePrefix    = "sk_live_"
	TestPrefix    = "sk_test_"
	KeyPrefixLen  = 16 // "sk_test_" + lookup id
	KeyLen        = 49
	minKeyLen     = 20
	hashDomainKey = "apikey"
	hashDomainAdm = "admin"
	adminPrefix   = "adm_"
	modeLive      = "live"
	modeTest      = "test"
)

// ParseBearer returns the token of an "Authorization: Bearer <token>"
// header value, or false when the header is empty or not in that form.
func ParseBearer(h string) (string, bool) {
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	t := strings.TrimSpace(h[7:])
	if t == "" {
		return "", false
	}
	return t, true
}

// ParseAPIKey checks a key's shape and returns its prefix: INVALID_FORMAT
// without a live/test prefix or when shorter than 20, exactly as decided
// (a longer key with a known prefix is a HASH_MISMATCH, found without
// hashing it: AuthenticateKey).
func ParseAPIKey(key string) (prefix string, err error) {
	if !strings.HasPrefix(key, LivePrefix) && !strings.HasPrefix(key, TestPrefix) {
		return "", ErrInvalidFormat
	}
	if len(key) < minKeyLen {
		return "", ErrInvalidFormat
	}
	return key[:KeyPrefixLen], nil
}

// Caller is an authenticated API key and its project.
type Caller struct {
	Prefix  string
	Mode    string
	Project *store.Project
}

// cachedKey is the in-memory copy of a key row for the hot path.
type cachedKey struct {
	hash      [store.HashSize]byte
	projectID string
	mode      string
	revoked   bool
	expiresAt time.Time // zero: never
}

// AuthenticateKey validates an Authorization header value as an API key in
// the decided order: MISSING_API_KEY, INVALID_FORMAT, API_KEY_NOT_FOUND,
// HASH_MISMATCH, API_KEY_REVOKED, API_KEY_EXPIRED, INVALID_API_KEY; a
// store failure is 401 INTERNAL_ERROR. Rate limiting is separate (Allow).
func (s *Service) AuthenticateKey(ctx context.Context, header string) (*Caller, error) {
	key, ok := ParseBearer(header)
	if !ok {
		return nil, ErrMissingAPIKey
	}
	prefix, err := ParseAPIKey(key)
	if err != nil {
		return nil, err
	}
	ck, err := s.lookupKey(ctx, prefix)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrAPIKeyNotFound
	} else if err != nil {
		return nil, ErrKeyInternal.Because(err)
	}
	// Every key is KeyLen long (the format is public), so a key of any
	// other length cannot match: it is not hashed, which also keeps a
	// megabyte-long header from costing a megabyte of HMAC.
	if len(key) != KeyLen {
		return nil, ErrHashMismatch
	}
	h := s.keys.HashString(hashDomainKey, key)
	if subtle.ConstantTimeCompare(h[:], ck.hash[:]) != 1 {
		return nil, ErrHashMismatch
	}
	if ck.revoked {
		return nil, ErrAPIKeyRevoked
	}
	if !ck.expiresAt.IsZero() && !s.now().Before(ck.expiresAt) {
		return nil, ErrAPIKeyExpired
	}
	if ck.projectID == "" {
		return nil, ErrInvalidAPIKey
	}
	p, err := s.project(ctx, ck.projectID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidAPIKey
	} else if err != nil {
		return nil, ErrKeyInternal.Because(err)
	}
	return &Caller{Prefix: prefix, Mode: ck.mode, Project: p}, nil
}

// Allow counts one request for the caller's key against its project's
// rate (rateLimitPerMinute, default 100).
func (s *Service) Allow(c *Caller) RateResult {
	limit := c.Project.RateLimitPerMinute
	if limit <= 0 {
		limit = DefaultRateLimit
	}
	return s.limiter.Allow(c.Prefix, limit)
}

// ForgetIdleLimits releases rate windows of idle keys.
func (s *Service) ForgetIdleLimits() { s.limiter.Forget() }

func (s *Service) lookupKey(ctx context.Context, prefix string) (*cachedKey, error) {
	if ck, ok := s.apiKeys.get(prefix); ok {
		return ck, nil
	}
	gen := s.apiKeys.generation()
	var k *store.APIKey
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		k, err = tx.APIKey(prefix)
		return err
	})
	if err != nil {
		return nil, err
	}
	ck := &cachedKey{projectID: k.ProjectID, mode: k.Mode, revoked: k.Revoked}
	copy(ck.hash[:], k.Hash)
	if k.ExpiresAt != nil {
		ck.expiresAt = *k.ExpiresAt
	}
	s.apiKeys.fill(prefix, ck, gen)
	return ck, nil
}

// project returns a project from the cache or the store.
func (s *Service) project(ctx context.Context, id string) (*store.Project, error) {
	if p, ok := s.projects.get(id); ok {
		return p, nil
	}
	gen := s.projects.generation()
	var p *store.Project
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		p, err = tx.Project(id)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.projects.fill(id, p, gen)
	return p, nil
}

// newAPIKey returns a fresh key string for mode.
func newAPIKey(mode string) string {
	p := TestPrefix
	if mode == modeLive {
		p = LivePrefix
	}
	return p + randomString(base62, 8) + "_" + randomString(base62, 32)
}

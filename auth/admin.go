package auth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

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

// KeyInput is the body of key creation.
type KeyInput struct {
	ProjectID *string `json:"projectId"`
	Mode      string  `json:"mode"`
	ExpiresAt *string `json:"expiresAt"`
}

// KeyView is a key as the admin API shows it (never the key itself).
type KeyView struct {
	Prefix    string  `json:"prefix"`
	ProjectID *string `json:"projectId"`
	Mode      string  `json:"mode"`
	ExpiresAt *string `json:"expiresAt"`
	Revoked   bool    `json:"revoked"`
	CreatedAt string  `json:"createdAt"`
}

// ViewKey returns the admin view of k.
func ViewKey(k *store.APIKey) KeyView {
	v := KeyView{Prefix: k.Prefix, Mode: k.Mode, Revoked: k.Revoked, CreatedAt: formatTime(k.CreatedAt)}
	if k.ProjectID != "" {
		id := k.ProjectID
		v.ProjectID = &id
	}
	if k.ExpiresAt != nil {
		e := formatTime(*k.ExpiresAt)
		v.ExpiresAt = &e
	}
	return v
}

// CreateKey creates an API key and returns it; the key string is shown
// only here. A nil or empty projectId makes a key without a project
// (it authenticates but cannot call project endpoints). An expiresAt in
// the past is allowed.
func (s *Service) CreateKey(ctx context.Context, in KeyInput) (string, *store.APIKey, error) {
	if in.Mode != modeLive && in.Mode != modeTest {
		return "", nil, Invalid(`mode must be "live" or "test".`)
	}
	k := &store.APIKey{Mode: in.Mode, CreatedAt: s.now().UTC()}
	if in.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *in.ExpiresAt)
		if err != nil {
			return "", nil, Invalid("expiresAt must be an RFC 3339 timestamp.")
		}
		t = t.UTC()
		k.ExpiresAt = &t
	}
	var key string
	err := s.db.Update(ctx, func(tx store.Tx) error {
		if in.ProjectID != nil && *in.ProjectID != "" {
			if _, err := projectTx(tx, *in.ProjectID); err != nil {
				return err
			}
			k.ProjectID = *in.ProjectID
		}
		var err error
		key, err = s.putNewKey(tx, k)
		return err
	})
	if err != nil {
		return "", nil, internal(err)
	}
	return key, k, nil
}

// putNewKey gives k a fresh key of its mode (a lookup id no other key
// has), stores k with the key's keyed hash and returns the key.
func (s *Service) putNewKey(tx store.Tx, k *store.APIKey) (string, error) {
	for {
		key := newAPIKey(k.Mode)
		k.Prefix = key[:KeyPrefixLen]
		_, err := tx.APIKey(k.Prefix)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		h := s.keys.HashString(hashDomainKey, key)
		k.Hash = h[:]
		return key, tx.PutAPIKey(k)
	}
}

// Keys lists keys, all or one project's.
func (s *Service) Keys(ctx context.Context, projectID string) ([]*store.APIKey, error) {
	var out []*store.APIKey
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = tx.APIKeys(projectID)
		return err
	})
	return out, internal(err)
}

// RevokeKey revokes the key with prefix (404 API_KEY_NOT_FOUND).
func (s *Service) RevokeKey(ctx context.Context, prefix string) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		k, err := tx.APIKey(prefix)
		if errors.Is(err, store.ErrNotFound) {
			return ErrKeyNotFound
		} else if err != nil {
			return err
		}
		k.Revoked = true
		return tx.PutAPIKey(k)
	})
	if err != nil {
		return internal(err)
	}
	s.apiKeys.invalidate(prefix)
	return nil
}

var methodName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// MethodView is an external-method registration as the admin API shows
// it; Secret is set only at creation.
type MethodView struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Method    string `json:"method"`
	Pattern   string `json:"pattern"`
	Status    string `json:"status"`
	Secret    string `json:"secret,omitempty"`
	CreatedAt string `json:"createdAt"`
}

func viewMethod(m *store.ExternalMethod) MethodView {
	return MethodView{ID: m.ID, ProjectID: m.ProjectID, Method: m.Method, Pattern: m.Pattern, Status: m.Status, CreatedAt: formatTime(m.CreatedAt)}
}

// CreateMethod registers an external method for a project and returns it
// with its secret (64 hex characters), shown only here.
func (s *Service) CreateMethod(ctx context.Context, projectID, method, pattern string) (MethodView, error) {
	if !methodName.MatchString(method) {
		return MethodView{}, Invalid("method must match [a-z0-9_-]{1,64}.")
	}
	if pattern != "direct" && pattern != "webhook" {
		return MethodView{}, Invalid(`pattern must be "direct" or "webhook".`)
	}
	secret := hex.EncodeToString(randomBytes(32))
	m := &store.ExternalMethod{ID: uuid.NewString(), ProjectID: projectID, Method: method, Pattern: pattern, Status: "active", CreatedAt: s.now().UTC()}
	sealed, err := s.keys.Seal([]byte(secret), []byte("method:"+m.ID))
	if err != nil {
		return MethodView{}, internal(err)
	}
	m.Secret = sealed
	err = s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		if _, err := tx.ExternalMethodByName(projectID, method); err == nil {
			return ErrMethodExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.PutExternalMethod(m)
	})
	if err != nil {
		return MethodView{}, internal(err)
	}
	v := viewMethod(m)
	v.Secret = secret
	return v, nil
}

// Methods lists a project's external-method registrations, oldest
// first, without their secrets. An unknown project is 404
// PROJECT_NOT_FOUND.
func (s *Service) Methods(ctx context.Context, projectID string) ([]MethodView, error) {
	out := []MethodView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		ms, err := tx.ExternalMethods(projectID)
		for _, m := range ms {
			out = append(out, viewMethod(m))
		}
		return err
	})
	return out, internal(err)
}

// SetMethodStatus activates or deactivates a registration.
func (s *Service) SetMethodStatus(ctx context.Context, id, status string) (MethodView, error) {
	if status != "active" && status != "inactive" {
		return MethodView{}, Invalid(`status must be "active" or "inactive".`)
	}
	var m *store.ExternalMethod
	err := s.db.Update(ctx, func(tx store.Tx) error {
		var err error
		m, err = tx.ExternalMethod(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrMethodNotFound
		} else if err != nil {
			return err
		}
		m.Status = status
		return tx.PutExternalMethod(m)
	})
	if err != nil {
		return MethodView{}, internal(err)
	}
	return viewMethod(m), nil
}

// AdminUser is a user as the admin API shows it.
type AdminUser struct {
	ID             string  `json:"id"`
	ProjectID      string  `json:"projectId"`
	Email          string  `json:"email"`
	ExternalUserID *string `json:"externalUserId"`
	CompanyID      *string `json:"companyId"`
	FirstName      *string `json:"firstName"`
	EmailVerified  bool    `json:"emailVerified"`
	Disabled       bool    `json:"disabled"`
	CreatedAt      string  `json:"createdAt"`
}

// viewAdminUser returns the admin view of u, settling its emailVerified
// inside tx.
func viewAdminUser(tx store.Tx, u *store.User) (AdminUser, error) {
	if _, err := settleVerified(tx, u); err != nil {
		return AdminUser{}, err
	}
	return AdminUser{ID: u.ID, ProjectID: u.ProjectID, Email: u.Email, ExternalUserID: nullable(u.ExternalUserID),
		CompanyID: nullable(u.CompanyID), FirstName: nullable(u.FirstName), EmailVerified: isVerified(u),
		Disabled: u.Disabled, CreatedAt: formatTime(u.CreatedAt)}, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// UserPage is one page of a project's users in email order. NextCursor,
// when not nil, asks for the next page; it is nil on the last one.
type UserPage struct {
	Users      []AdminUser
	NextCursor *string
}

// AdminUsers lists a page of a project's users in email order: limit of
// them (default 100, at most MaxPageSize), after cursor (the NextCursor of
// the previous page; "" from the first). The email filter uses the email
// index: a whole address matches exactly, anything else ("ada@", "ad") is
// an address prefix (a search). Each page costs the same at any depth: a
// seek in the index, then limit rows. 400 VALIDATION_ERROR for a cursor
// that is not one, 404 PROJECT_NOT_FOUND for an unknown project.
func (s *Service) AdminUsers(ctx context.Context, projectID, email, cursor string, limit int) (UserPage, error) {
	if projectID == "" {
		return UserPage{}, Invalid("projectId is required.")
	}
	limit = pageSize(limit)
	after, err := parseUserCursor(cursor)
	if err != nil {
		return UserPage{}, err
	}
	email = strings.ToLower(strings.TrimSpace(email))
	page := UserPage{Users: []AdminUser{}}
	err = s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		if addr, err := NormalizeEmail(email); err == nil {
			if after != "" && after >= addr {
				return nil
			}
			u, err := tx.UserByEmail(projectID, addr)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			v, err := viewAdminUser(tx, u)
			page.Users = append(page.Users, v)
			return err
		}
		users, more, err := tx.Users(projectID, email, after, limit)
		if err != nil {
			return err
		}
		for _, u := range users {
			v, err := viewAdminUser(tx, u)
			if err != nil {
				return err
			}
			page.Users = append(page.Users, v)
		}
		if more && len(users) > 0 {
			c := userCursor(users[len(users)-1].Email)
			page.NextCursor = &c
		}
		return nil
	})
	return page, internal(err)
}

// userCursor is the opaque cursor after a user: its address, base64url.
func userCursor(email string) string { return base64.RawURLEncoding.EncodeToString([]byte(email)) }

func parseUserCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 || len(b) > 1024 {
		return "", Invalid("cursor is not valid: pass the nextCursor of the previous page.")
	}
	return string(b), nil
}

// NullableString is a JSON field that may be absent (Set false), null
// (Set true, Value nil) or a string.
type NullableString struct {
	Set   bool
	Value *string
}

// UnmarshalJSON implements json.Unmarshaler; a non-string, non-null value
// is a *json.UnmarshalTypeError.
func (n *NullableString) UnmarshalJSON(b []byte) error {
	n.Set = true
	n.Value = nil
	return json.Unmarshal(b, &n.Value)
}

// SetUserCompany sets a user's companyId, or with null clears it. The
// field is required: a body without it is 400 VALIDATION_ERROR and
// changes nothing.
func (s *Service) SetUserCompany(ctx context.Context, id string, in NullableString) (AdminUser, error) {
	if !in.Set {
		return AdminUser{}, Invalid("companyId is required: a string, or null to clear it.")
	}
	companyID := in.Value
	var view AdminUser
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		u.CompanyID = ""
		if companyID != nil {
			c := strings.TrimSpace(*companyID)
			if c == "" || len(c) > 128 {
				return Invalid("companyId must be 1 to 128 characters or null.")
			}
			u.CompanyID = c
		}
		u.UpdatedAt = s.now().UTC()
		if err := tx.PutUser(u); err != nil {
			return err
		}
		view, err = viewAdminUser(tx, u)
		return err
	})
	if err != nil {
		return AdminUser{}, internal(err)
	}
	return view, nil
}

// SetUserDisabled disables or enables a user. Disabling revokes every
// session of the user in the same transaction.
func (s *Service) SetUserDisabled(ctx context.Context, id string, disabled bool) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		u.Disabled = disabled
		u.UpdatedAt = s.now().UTC()
		if disabled {
			if err := s.revokeAll(tx, u); err != nil {
				return err
			}
		}
		return tx.PutUser(u)
	})
	return internal(err)
}

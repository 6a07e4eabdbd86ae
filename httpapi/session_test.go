package httpapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.login("s@example.com")
	tok, uid := str(t, r.Body, "token"), str(t, r.Body, "userId")

	s := ts.do("GET", "/api/v1/session", tok, nil)
	wantOK(t, s)
	sess := obj(t, s.Body, "session")
	iat, exp := sess["issuedAt"].(float64), sess["expiresAt"].(float64)
	if sess["userId"] != uid || exp-iat != 86400 {
		t.Fatalf("session=%v", sess)
	}

	g := ts.do("GET", "/api/v1/user", tok, nil)
	wantOK(t, g)
	if obj(t, g.Body, "user")["id"] != uid {
		t.Fatalf("user=%s", g.Raw)
	}

	wantOK(t, ts.do("POST", "/api/v1/logout", tok, nil))
	for _, path := range []string{"/api/v1/session", "/api/v1/user", "/api/v1/me"} {
		wantError(t, ts.do("GET", path, tok, nil), 401, "INVALID_SESSION")
	}
	wantError(t, ts.do("POST", "/api/v1/logout", tok, nil), 401, "INVALID_SESSION")
	if types := ts.outbox(); types[len(types)-1] != "session.revoked" {
		t.Fatalf("outbox=%v", types)
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"sessionTtlSeconds": 300}))
	tok := str(t, ts.login("x@example.com").Body, "token")
	wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
	ts.Clock.Advance(300 * time.Second)
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	// The scheduler's sweep removes the row.
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPatchAndDeleteUser(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("p@example.com").Body, "token")
	ts.login("taken@example.com")

	// The address changes once the code mailed to it comes back
	// (emailChange "verify"); the first name at once.
	r := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "New@Example.com", "firstName": "Pat"})
	wantOK(t, r)
	if u := obj(t, r.Body, "user"); u["email"] != "p@example.com" || u["firstName"] != "Pat" || u["id"] == nil || r.Body["pendingEmail"] != "new@example.com" {
		t.Fatalf("patch answered %s", r.Raw)
	}
	v := ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": ts.lastMail("new@example.com").Code})
	wantOK(t, v)
	if u := obj(t, v.Body, "user"); u["email"] != "new@example.com" || u["emailVerified"] != true {
		t.Fatalf("verify answered %s", v.Raw)
	}
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "taken@example.com"}), 409, "EMAIL_IN_USE")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "not-an-email"}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"firstName": ""}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"firstName": strings.Repeat("x", 101)}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": 5}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PUT", "/api/v1/user", tok, map[string]any{"email": "a@example.com"}), 405, "METHOD_NOT_ALLOWED")
	g := ts.do("GET", "/api/v1/user", tok, nil)
	if u := obj(t, g.Body, "user"); u["email"] != "new@example.com" || u["firstName"] != "Pat" {
		t.Fatalf("after failed patches: %s", g.Raw)
	}
	// Setting what is already there changes nothing: no user.updated
	// (one per call would let a session flood every webhook).
	n := len(ts.outbox())
	for i := 0; i < 3; i++ {
		wantOK(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"firstName": "Pat", "email": "New@example.com"}))
	}
	if got := ts.outboxSince(n); len(got) != 0 {
		t.Fatalf("no-op patches emitted %v", got)
	}

	wantOK(t, ts.do("DELETE", "/api/v1/user", tok, nil))
	for _, c := range []struct{ method, path string }{{"GET", "/api/v1/user"}, {"GET", "/api/v1/session"}, {"GET", "/api/v1/me"}, {"DELETE", "/api/v1/user"}, {"POST", "/api/v1/logout"}} {
		wantError(t, ts.do(c.method, c.path, tok, nil), 401, "INVALID_SESSION")
	}
	types := ts.outbox()
	if !slices.Contains(types, "user.updated") || types[len(types)-1] != "user.deleted" {
		t.Fatalf("outbox=%v", types)
	}
	// The address is free again: signing in makes a new user.
	if r := ts.login("new@example.com"); r.Body["isNewUser"] != true {
		t.Fatal("deleted user's address did not sign up anew")
	}
}

func TestJWTShapeAndJWKS(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("j@example.com").Body, "token")
	parts := strings.Split(tok, ".")
	var hdr map[string]any
	var cl map[string]any
	decodeSeg(t, parts[0], &hdr)
	decodeSeg(t, parts[1], &cl)
	if hdr["alg"] != "ES256" || hdr["kid"] == nil {
		t.Fatalf("header=%v", hdr)
	}
	if cl["iss"] != ts.URL || cl["aud"] != ts.Project.ID || cl["sub"] == nil || cl["sid"] == nil || cl["iat"] == nil || cl["exp"] == nil {
		t.Fatalf("claims=%v", cl)
	}
	// Verify offline with the published key.
	r := ts.do("GET", "/api/v1/projects/"+ts.Project.ID+"/jwks.json", "", nil)
	wantOK(t, r)
	k := r.Body["keys"].([]any)[0].(map[string]any)
	if k["kid"] != hdr["kid"] || k["alg"] != "ES256" || k["crv"] != "P-256" {
		t.Fatalf("jwk=%v", k)
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: bigB64(t, k["x"].(string)), Y: bigB64(t, k["y"].(string))}
	_, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return pub, nil }, jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(ts.Clock.Now))
	if err != nil {
		t.Fatalf("offline verify: %v", err)
	}
	wantError(t, ts.do("GET", "/api/v1/projects/nope/jwks.json", "", nil), 404, "PROJECT_NOT_FOUND")
}

func TestForgedTokens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("v@example.com")
	tok := str(t, login.Body, "token")
	parts := strings.Split(tok, ".")
	var cl map[string]any
	decodeSeg(t, parts[1], &cl)

	// Another project's valid token.
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherID := str(t, obj(t, r.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherID, "mode": "test"})
	wantOK(t, ts.do("POST", "/api/v1/otp/send", otherKey, map[string]any{"email": "v@example.com"}))
	code := ts.lastMail("v@example.com").Code
	otherTok := str(t, ts.do("POST", "/api/v1/otp/verify", otherKey, map[string]any{"email": "v@example.com", "code": code}).Body, "token")
	wantOK(t, ts.do("GET", "/api/v1/session", otherTok, nil))

	// The JWKS public key, for the HS256 key-confusion attack.
	jr := ts.do("GET", "/api/v1/projects/"+ts.Project.ID+"/jwks.json", "", nil)
	jwk := jr.Body["keys"].([]any)[0].(map[string]any)
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: bigB64(t, jwk["x"].(string)), Y: bigB64(t, jwk["y"].(string))}
	pubDER, _ := x509.MarshalPKIXPublicKey(pub)

	stranger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sign := func(alg string, claims map[string]any, key any) string {
		t.Helper()
		var m jwt.SigningMethod = jwt.SigningMethodES256
		switch alg {
		case "none":
			m = jwt.SigningMethodNone
		case "HS256":
			m = jwt.SigningMethodHS256
		}
		tk := jwt.NewWithClaims(m, jwt.MapClaims(claims))
		tk.Header["kid"] = jwk["kid"]
		s, err := tk.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range cl {
			c[kk] = vv
		}
		c[k] = v
		return c
	}
	tamperedPayload := parts[0] + "." + seg(t, with("sub", "someone-else")) + "." + parts[2]
	hs := func() string {
		h := hmac.New(sha256.New, pubDER)
		unsigned := seg(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": jwk["kid"]}) + "." + parts[1]
		h.Write([]byte(unsigned))
		return unsigned + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	}()

	cases := map[string]string{
		"tampered payload":      tamperedPayload,
		"alg none":              sign("none", cl, jwt.UnsafeAllowNoneSignatureType),
		"HS256 with public key": hs,
		"stranger's key":        sign("ES256", cl, stranger),
		"other project's aud":   parts[0] + "." + seg(t, with("aud", otherID)) + "." + parts[2],
		"truncated":             parts[0] + "." + parts[1],
		"garbage":               "not.a.jwt",
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.do("GET", "/api/v1/session", bad, nil), 401, "INVALID_SESSION")
		})
	}
	// Expired by the clock.
	ts.Clock.Advance(25 * time.Hour)
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
}

func decodeSeg(t *testing.T, s string, v any) {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func seg(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func bigB64(t *testing.T, s string) *big.Int {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return new(big.Int).SetBytes(b)
}

// TestAccountShapes: the account calls answer their documented shapes, and
// GET /session's integers are the JWT's own iat and exp.
func TestAccountShapes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("shape@example.com").Body, "token")
	var cl map[string]any
	decodeSeg(t, strings.Split(tok, ".")[1], &cl)

	s := ts.do("GET", "/api/v1/session", tok, nil)
	wantOK(t, s)
	sess := obj(t, s.Body, "session")
	if sess["userId"] != cl["sub"] || sess["issuedAt"] != cl["iat"] || sess["expiresAt"] != cl["exp"] || sess["id"] != cl["sid"] {
		t.Fatalf("session=%v claims=%v", sess, cl)
	}
	if !strings.Contains(string(s.Raw), fmt.Sprintf(`"issuedAt":%d,`, int64(cl["iat"].(float64)))) {
		t.Fatalf("issuedAt is not a plain integer: %s", s.Raw)
	}
	for _, path := range []string{"/api/v1/me", "/api/v1/user"} {
		r := ts.do("GET", path, tok, nil)
		wantOK(t, r)
		u := obj(t, r.Body, "user")
		if u["id"] != cl["sub"] || u["email"] != "shape@example.com" {
			t.Fatalf("%s: %s", path, r.Raw)
		}
		if v, ok := u["externalUserId"]; !ok || v != nil {
			t.Fatalf("%s: externalUserId should be present and null: %s", path, r.Raw)
		}
	}
	first := strings.Repeat("é", 100)
	p := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"firstName": first})
	wantOK(t, p)
	if u := obj(t, p.Body, "user"); u["id"] != cl["sub"] || u["email"] != "shape@example.com" {
		t.Fatalf("PATCH: %s", p.Raw)
	}
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"firstName": "   "}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, "not json"), 400, "VALIDATION_ERROR")
	// The profile shows in the next login result.
	r := ts.login("shape@example.com")
	if obj(t, r.Body, "user")["first_name"] != first {
		t.Fatalf("login user=%s", r.Raw)
	}
	for _, m := range []string{"PUT", "POST"} {
		wantError(t, ts.do(m, "/api/v1/user", tok, map[string]any{"email": "x@example.com"}), 405, "METHOD_NOT_ALLOWED")
	}
	wantError(t, ts.do("GET", "/api/v1/logout", tok, nil), 405, "METHOD_NOT_ALLOWED")
	wantError(t, ts.do("DELETE", "/api/v1/session", tok, nil), 405, "METHOD_NOT_ALLOWED")
}

// TestCachedTokenDiesWithItsSession: a token that has been used (and so
// verified and cached) stops working at once when the session ends by
// logout, user deletion or disabling, and other sessions are untouched.
func TestCachedTokenDiesWithItsSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, end := range []string{"logout", "delete", "disable"} {
		t.Run(end, func(t *testing.T) {
			addr := end + "@example.com"
			r := ts.login(addr)
			tok, uid := str(t, r.Body, "token"), str(t, r.Body, "userId")
			other := str(t, ts.login("bystander-"+addr).Body, "token")
			for i := 0; i < 3; i++ {
				wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
			}
			switch end {
			case "logout":
				wantOK(t, ts.do("POST", "/api/v1/logout", tok, nil))
			case "delete":
				wantOK(t, ts.do("DELETE", "/api/v1/user", tok, nil))
			case "disable":
				wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/disable", nil))
			}
			for _, c := range []struct{ method, path string }{{"GET", "/api/v1/session"}, {"GET", "/api/v1/me"}, {"GET", "/api/v1/user"}, {"PATCH", "/api/v1/user"}, {"POST", "/api/v1/logout"}, {"DELETE", "/api/v1/user"}} {
				wantError(t, ts.do(c.method, c.path, tok, map[string]any{"firstName": "x"}), 401, "INVALID_SESSION")
			}
			wantOK(t, ts.do("GET", "/api/v1/session", other, nil))
		})
	}
}

// TestTokenOfDeletedProject: deleting a project ends its users' tokens,
// whether or not they were verified (and cached) before.
func TestTokenOfDeletedProject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "doomed"})
	id := str(t, obj(t, r.Body, "project"), "id")
	key := ts.createKey(map[string]any{"projectId": id, "mode": "test"})
	var toks []string
	for _, addr := range []string{"used@example.com", "fresh@example.com"} {
		wantOK(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}))
		v := ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": ts.lastMail(addr).Code})
		wantOK(t, v)
		toks = append(toks, str(t, v.Body, "token"))
	}
	wantOK(t, ts.do("GET", "/api/v1/session", toks[0], nil)) // cached now
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+id, nil))
	for _, tok := range toks {
		wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	}
	wantError(t, ts.do("GET", "/api/v1/projects/"+id+"/jwks.json", "", nil), 404, "PROJECT_NOT_FOUND")
}

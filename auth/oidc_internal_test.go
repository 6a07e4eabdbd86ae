package auth

import (
	"latchkey/internal/testkit"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// The rules of the OpenID code flow that need no HTTP: how a session's
// proofs read as amr and acr, when a request asks for a new sign-in,
// and what the minter makes of what op gives it (the whole flow over
// HTTP: httpapi's TestOIDCCodeFlow and friends).

func TestOIDCAMR(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	proofs := func(methods ...string) []store.Proof {
		var out []store.Proof
		for i, m := range methods {
			out = append(out, store.Proof{Method: m, At: at.Add(time.Duration(i) * time.Minute)})
		}
		return out
	}
	for _, c := range []struct {
		methods []string
		amr     []string
		mfa     bool
	}{
		{[]string{"otp"}, []string{"otp"}, false},
		{[]string{"link"}, []string{"otp"}, false},
		{[]string{"backup_code"}, []string{"otp"}, false},
		{[]string{"passkey"}, []string{"hwk"}, false},
		{[]string{"oauth:google"}, []string{"fed"}, false},
		{[]string{"external"}, []string{"fed"}, false},
		{[]string{"otp", "totp"}, []string{"otp", "mfa"}, true},
		{[]string{"otp", "sms"}, []string{"otp", "mfa"}, true},
		{[]string{"email_otp", "mfa"}, []string{"otp", "mfa"}, true}, // a session stored before proofs
		{[]string{"passkey", "totp"}, []string{"hwk", "otp", "mfa"}, true},
		{[]string{"oauth:github", "totp", "sms"}, []string{"fed", "otp", "mfa"}, true},
		{[]string{"totp"}, []string{"otp"}, false}, // a second factor alone is one factor
	} {
		p := proofs(c.methods...)
		if got := oidcAMR(p); !slices.Equal(got, c.amr) {
			t.Errorf("amr of %v = %v, want %v", c.methods, got, c.amr)
		}
		if got := secondFactorProven(p); got != c.mfa {
			t.Errorf("second factor of %v = %v, want %v", c.methods, got, c.mfa)
		}
		if got := lastProof(p); !got.Equal(p[len(p)-1].At) {
			t.Errorf("auth_time of %v = %v", c.methods, got)
		}
	}
	// A synced (backup-eligible) passkey is swk, a device-bound one hwk.
	synced := proofs("passkey", "totp")
	synced[0].Synced = true
	if got := oidcAMR(synced); !slices.Equal(got, []string{"swk", "otp", "mfa"}) {
		t.Errorf("amr of a synced passkey and TOTP = %v", got)
	}
}

func TestOIDCMustSignInAgain(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sess := &store.Session{ID: "s", UserID: "u", Proofs: []store.Proof{{Method: "otp", At: now.Add(-10 * time.Minute)}}}
	u := &store.User{ID: "u", Email: "ada@example.com"}
	age := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		r    store.OIDCAuthRequest
		want bool
	}{
		{"nothing asked", store.OIDCAuthRequest{}, false},
		{"prompt=login", store.OIDCAuthRequest{Prompt: []string{"login"}}, true},
		{"prompt=select_account", store.OIDCAuthRequest{Prompt: []string{"select_account"}}, true},
		{"prompt=consent", store.OIDCAuthRequest{Prompt: []string{"consent"}}, false},
		{"max_age 0", store.OIDCAuthRequest{MaxAge: age(0)}, true},
		{"max_age passed", store.OIDCAuthRequest{MaxAge: age(599)}, true},
		{"max_age reached", store.OIDCAuthRequest{MaxAge: age(600)}, false},
		{"id_token_hint of the user", store.OIDCAuthRequest{HintUserID: "u"}, false},
		{"id_token_hint of another", store.OIDCAuthRequest{HintUserID: "v"}, true},
		{"login_hint of the user", store.OIDCAuthRequest{LoginHint: " Ada@Example.com "}, false},
		{"login_hint of another", store.OIDCAuthRequest{LoginHint: "bob@example.com"}, true},
		{"login_hint not an address", store.OIDCAuthRequest{LoginHint: "ada"}, false},
	} {
		if got := mustSignInAgain(&c.r, sess, u, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOIDCMinter(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "encrypts codes in memory")
	var m OIDCMinter
	code, err := m.Encrypt("0195f3a0-0000-7000-8000-000000000001")
	if err != nil || !strings.HasPrefix(code, "0195f3a0-0000-7000-8000-000000000001.") || len(code) != 36+1+43 {
		t.Fatalf("code %q %v, want the id, a dot and 43 characters", code, err)
	}
	if again, _ := m.Encrypt("0195f3a0-0000-7000-8000-000000000001"); again == code {
		t.Fatal("two codes of one request are the same")
	}
	if tok, err := m.Encrypt("aaa.bbb.ccc:user-1"); err != nil || tok != "aaa.bbb.ccc" {
		t.Fatalf("access token %q %v, want the JWT as is", tok, err)
	}
	for _, bad := range []string{"", "a.b", "not-a-jwt:user-1"} {
		if _, err := m.Encrypt(bad); err == nil {
			t.Errorf("Encrypt(%q) succeeded", bad)
		}
	}
	if _, err := m.Decrypt(code); err == nil {
		t.Error("Decrypt succeeded")
	}
}

// TestOIDCPasskeysOffered: the pages offer passkeys when the base URL's
// host is the project's rpId or under it and its origin is one the
// project's ceremonies accept; otherwise they say why.
func TestOIDCPasskeysOffered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		base    string
		rpID    string
		origins []string
		ok      bool
		why     string
	}{
		{"https://auth.example.com", "example.com", []string{"https://app.example.com", "https://auth.example.com"}, true, ""},
		{"https://auth.example.com", "", nil, true, ""}, // rpId and origin from the base URL
		{"http://localhost:8080", "", nil, true, ""},
		{"https://auth.example.com", "example.com", []string{"https://app.example.com"}, false, "not one of the project's allowedOrigins"},
		{"https://auth.other.org", "example.com", nil, false, "nor under it"},
		{"https://auth.example.com", "", []string{"https://app.example.com"}, false, "nor under it"}, // rpId app.example.com
		{"http://127.0.0.1:8080", "", nil, false, "loopback"},
		{"https://notexample.com", "example.com", []string{"https://notexample.com"}, false, "nor under it"},
	} {
		s := &Service{baseURL: c.base}
		ok, why := s.OIDCPasskeys(&store.Project{RPID: c.rpID, AllowedOrigins: c.origins})
		if ok != c.ok || !strings.Contains(why, c.why) {
			t.Errorf("base %s rpId %q origins %v: %v %q, want %v %q", c.base, c.rpID, c.origins, ok, why, c.ok, c.why)
		}
	}
}

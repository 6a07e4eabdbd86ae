package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"latchkey/internal/testkit"
	"reflect"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"latchkey/auth/passkeytest"
	"latchkey/store"
	"latchkey/store/storetest"
)

// newPasskeyService returns a Service on a fresh data file with the
// default project, and its clock.
func newPasskeyService(t *testing.T) (*Service, *store.Project, *time.Time) {
	t.Helper()
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s, err := New(db, keys, Config{BaseURL: "http://127.0.0.1:8080", AdminToken: "adm_x", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s, b.Project, &now
}

// TestRelyingParty: rpId and origins per project (docs/api.md, "Relying
// party and origins"), with a loopback address standing as "localhost"
// and other IPs refused.
func TestRelyingParty(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		base    string
		rpID    string
		origins []string
		wantID  string
		want    []string // nil: refused with VALIDATION_ERROR
	}{
		{"explicit rpId", "https://auth.example.net", "example.com", []string{"https://app.example.com"},
			"example.com", []string{"https://app.example.com"}},
		{"first origin's host", "https://auth.example.net", "", []string{"https://shop.example.org:8443", "https://b.example"},
			"shop.example.org", []string{"https://shop.example.org:8443", "https://b.example"}},
		{"base URL without origins", "https://auth.example.net", "", nil,
			"auth.example.net", []string{"https://auth.example.net"}},
		{"base URL with port", "https://auth.example.net:9443/", "", nil,
			"auth.example.net", []string{"https://auth.example.net:9443"}},
		{"loopback base URL", "http://127.0.0.1:8080", "", nil,
			"localhost", []string{"http://127.0.0.1:8080", "http://localhost:8080"}},
		{"IPv6 loopback base URL", "http://[::1]:8080", "", nil,
			"localhost", []string{"http://[::1]:8080", "http://localhost:8080"}},
		{"loopback origin with its twin listed", "https://auth.example.net", "", []string{"http://127.0.0.1:3000", "http://localhost:3000"},
			"localhost", []string{"http://127.0.0.1:3000", "http://localhost:3000"}},
		{"explicit rpId keeps origins as listed", "https://auth.example.net", "example.com", []string{"http://127.0.0.1:3000"},
			"example.com", []string{"http://127.0.0.1:3000"}},
		{"private address", "https://auth.example.net", "", []string{"http://10.1.2.3:3000"}, "10.1.2.3", nil},
		{"public address base URL", "http://192.0.2.7:8080", "", nil, "192.0.2.7", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Service{baseURL: tc.base}
			p := &store.Project{Name: "shop", RPID: tc.rpID, AllowedOrigins: tc.origins}
			if got := s.RPID(p); got != tc.wantID {
				t.Fatalf("RPID=%q, want %q", got, tc.wantID)
			}
			rp, err := s.relyingParty(p)
			if tc.want == nil {
				if e := AsError(err); e.Code != "VALIDATION_ERROR" || !errors.Is(err, ErrValidation) {
					t.Fatalf("err=%v, want VALIDATION_ERROR (ErrValidation)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := rp.Config
			if c.RPID != tc.wantID || c.RPDisplayName != "shop" || !reflect.DeepEqual(c.RPOrigins, tc.want) {
				t.Fatalf("relying party %q %q %v, want %q shop %v", c.RPID, c.RPDisplayName, c.RPOrigins, tc.wantID, tc.want)
			}
			for name, to := range map[string]struct {
				Enforce             bool
				Timeout, TimeoutUVD time.Duration
			}{"login": {c.Timeouts.Login.Enforce, c.Timeouts.Login.Timeout, c.Timeouts.Login.TimeoutUVD},
				"registration": {c.Timeouts.Registration.Enforce, c.Timeouts.Registration.Timeout, c.Timeouts.Registration.TimeoutUVD}} {
				if !to.Enforce || to.Timeout != ChallengeLifetime || to.TimeoutUVD != ChallengeLifetime {
					t.Fatalf("%s timeouts=%+v, want enforced 5 minutes", name, to)
				}
			}
			if c.ExtensionsUnsolicitedOutputPolicy != protocol.UnsolicitedOutputPolicyIgnore {
				t.Fatal("unsolicited client extension outputs would fail real browsers' ceremonies")
			}
			if len(p.AllowedOrigins) != len(tc.origins) {
				t.Fatal("relyingParty changed the project's origins")
			}
		})
	}
}

// TestPasskeySessionExpires: go-webauthn's own expiry is on (it defaults
// to off), so its session data expires with our challenge.
func TestPasskeySessionExpires(t *testing.T) {
	t.Parallel()
	s := &Service{baseURL: "https://auth.example.net"}
	rp, err := s.relyingParty(&store.Project{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	_, reg, err := rp.BeginRegistration(&waUser{id: "u1", name: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, login, err := rp.BeginDiscoverableLogin()
	if err != nil {
		t.Fatal(err)
	}
	for _, exp := range []time.Time{reg.Expires, login.Expires} {
		if d := exp.Sub(before); d < ChallengeLifetime || d > ChallengeLifetime+time.Minute {
			t.Fatalf("session expires %v after start, want 5 minutes", d)
		}
	}
	// An expired session is refused by go-webauthn itself.
	a := passkeytest.New("https://auth.example.net")
	creation, sess, err := rp.BeginRegistration(&waUser{id: "u2", name: "b@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(creation.Response)
	cred, _, err := a.Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(cred)
	if err != nil {
		t.Fatal(err)
	}
	sess.Expires = time.Now().Add(-time.Second)
	if _, err := rp.CreateCredential(&waUser{id: "u2"}, *sess, parsed); err == nil {
		t.Fatal("an expired session verified")
	}
	sess.Expires = time.Now().Add(time.Minute)
	if _, err := rp.CreateCredential(&waUser{id: "u2"}, *sess, parsed); err != nil {
		t.Fatalf("a live session failed: %v", err)
	}
}

// TestCeremonyOptions: options are go-webauthn's options object, with the
// same object again under "publicKey".
func TestCeremonyOptions(t *testing.T) {
	t.Parallel()
	s := &Service{baseURL: "https://auth.example.net"}
	rp, err := s.relyingParty(&store.Project{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	assertion, _, err := rp.BeginDiscoverableLogin()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ceremonyOptions(assertion.Response)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	inner, _ := json.Marshal(assertion.Response)
	var want map[string]any
	json.Unmarshal(inner, &want)
	pub := got["publicKey"]
	delete(got, "publicKey")
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(pub, want) {
		t.Fatalf("options=%s, want %s at the top and under publicKey", raw, inner)
	}
	if want["rpId"] != "auth.example.net" || want["challenge"] == "" {
		t.Fatalf("request options=%s", inner)
	}
}

// TestTakeChallenge: a challenge is consumed once; one of another
// project, kind, owner or session is refused without being consumed; an expired
// one is refused and removed; the sweep removes expired ones.
func TestTakeChallenge(t *testing.T) {
	t.Parallel()
	s, p, now := newPasskeyService(t)
	other := &store.Project{ID: "another-project"}
	put := func(kind, user, bound string) string {
		t.Helper()
		ch := &store.Challenge{ProjectID: p.ID, Kind: kind, UserID: user}
		if _, err := s.putChallenge(ctx, ch, nil, bound, map[string]any{}); err != nil {
			t.Fatal(err)
		}
		return ch.ID
	}
	// take commits a refusal as the verify calls do (with its event).
	take := func(p *store.Project, id, kind string, belongs func(*store.Challenge, string) bool) error {
		var fail error
		err := s.db.Update(ctx, func(tx store.Tx) error {
			_, _, fail = s.takeChallenge(tx, p, id, kind, belongs)
			if isAuthError(fail) {
				return nil
			}
			return fail
		})
		if err != nil {
			t.Fatal(err)
		}
		return fail
	}
	exists := func(id string) bool {
		err := s.db.View(ctx, func(tx store.Tx) error { _, err := tx.Challenge(id); return err })
		return err == nil
	}

	id := put(challengeLogin, "", "")
	for _, bad := range []error{
		take(other, id, challengeLogin, nil),
		take(p, id, challengeRegister, nil),
		take(p, id, challengeLogin, func(*store.Challenge, string) bool { return false }),
	} {
		if !errors.Is(bad, ErrChallengeExpired) {
			t.Fatalf("err=%v, want CHALLENGE_EXPIRED", bad)
		}
	}
	if !exists(id) {
		t.Fatal("a refused caller consumed the challenge")
	}
	if err := take(p, id, challengeLogin, func(ch *store.Challenge, _ string) bool { return ch.Kind == challengeLogin }); err != nil {
		t.Fatal(err)
	}
	if exists(id) || !errors.Is(take(p, id, challengeLogin, nil), ErrChallengeExpired) {
		t.Fatal("a challenge was usable twice")
	}

	// A challenge bound to a session is handed only to a caller that
	// accepts that session (the registration from a session: its own).
	bound := put(challengeRegister, "u1", "session-1")
	of := func(want string) func(*store.Challenge, string) bool {
		return func(_ *store.Challenge, b string) bool { return b == want }
	}
	if err := take(p, bound, challengeRegister, of("session-2")); !errors.Is(err, ErrChallengeExpired) || !exists(bound) {
		t.Fatalf("another session's take: err=%v, consumed=%v", err, !exists(bound))
	}
	if err := take(p, bound, challengeRegister, of("session-1")); err != nil {
		t.Fatal(err)
	}

	old := put(challengeRegister, "u1", "")
	*now = now.Add(ChallengeLifetime - time.Nanosecond)
	fresh := put(challengeRegister, "u1", "")
	*now = now.Add(time.Nanosecond)
	if err := take(p, old, challengeRegister, nil); !errors.Is(err, ErrChallengeExpired) {
		t.Fatalf("5-minute-old challenge: err=%v, want CHALLENGE_EXPIRED", err)
	}
	if exists(old) {
		t.Fatal("an expired challenge was left behind")
	}
	stale := put(challengeLogin, "", "")
	*now = now.Add(ChallengeLifetime)
	var swept int
	if err := s.db.Update(ctx, func(tx store.Tx) (err error) {
		swept, err = tx.SweepExpired(store.ExpiringChallenges, *now, 1000)
		return
	}); err != nil {
		t.Fatal(err)
	}
	if swept != 2 || exists(fresh) || exists(stale) {
		t.Fatalf("swept %d, want the 2 expired challenges", swept)
	}
}

// TestCheckFinish: a verify body needs a challengeId and a credential
// object; anything else is a validation error before anything is spent.
func TestCheckFinish(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks a ceremony body in memory")
	for _, tc := range []struct {
		id   string
		cred string
		ok   bool
	}{
		{"c", `{"id":"x"}`, true},
		{"c", `{}`, true},
		{"", `{"id":"x"}`, false},
		{"c", ``, false},
		{"c", `null`, false},
		{"c", `"eyJ9"`, false},
		{"c", `[{}]`, false},
		{"c", `42`, false},
	} {
		err := checkFinish(tc.id, json.RawMessage(tc.cred))
		want := "INVALID_CREDENTIAL" // a credential that is not a JSON object
		if tc.id == "" {
			want = "VALIDATION_ERROR"
		}
		if (err == nil) != tc.ok || (err != nil && AsError(err).Code != want) {
			t.Fatalf("checkFinish(%q, %s)=%v, want ok=%v (%s)", tc.id, tc.cred, err, tc.ok, want)
		}
	}
}

// TestFirstOrigins: the first-start project allows the server's own
// origin and http://localhost:3000, the server's first so that it is the
// relying party, unless it is an IP address other than loopback (which
// cannot be one).
func TestFirstOrigins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		base   string
		want   []string
		wantRP string
	}{
		{"http://127.0.0.1:8080", []string{"http://127.0.0.1:8080", "http://localhost:3000"}, "localhost"},
		{"http://localhost:8080", []string{"http://localhost:8080", "http://localhost:3000"}, "localhost"},
		{"https://auth.example.com", []string{"https://auth.example.com", "http://localhost:3000"}, "auth.example.com"},
		{"https://Auth.Example.com:443/", []string{"https://auth.example.com", "http://localhost:3000"}, "auth.example.com"},
		{"http://localhost:3000", []string{"http://localhost:3000"}, "localhost"},
		{"http://0.0.0.0:8080", []string{"http://localhost:3000", "http://0.0.0.0:8080"}, "localhost"},
		{"http://192.0.2.7:8080", []string{"http://localhost:3000", "http://192.0.2.7:8080"}, "localhost"},
		{"http://[::1]:8080", []string{"http://[::1]:8080", "http://localhost:3000"}, "localhost"},
	} {
		s := &Service{baseURL: tc.base}
		got := s.firstOrigins()
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("base %s: origins %v, want %v", tc.base, got, tc.want)
		}
		if rp := s.RPID(&store.Project{AllowedOrigins: got}); rp != tc.wantRP {
			t.Errorf("base %s: rpId %q, want %q", tc.base, rp, tc.wantRP)
		}
	}
}

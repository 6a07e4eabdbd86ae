// Fixture: records of every kind a move carries (store.RecordKinds), for
// the tests of latchkey copy and of backups, and the comparison of what a
// store exports with them.

package storetest

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// fixtureTime is the creation time of the fixture's records: nanoseconds
// set, so that a backend that rounds times fails the comparison.
var fixtureTime = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

// Fixture returns records of every kind store.RecordKinds names, in its
// order (the order Export passes them): for each kind, one record with
// every field set and, for most, one with the optional fields left out
// (nil pointers, empty lists). Ids are canonical UUIDs where the store
// keeps ids; expiry times are years ahead, so no sweep removes a record
// while a test runs. Each call returns new values.
func Fixture() []any {
	at := func(d time.Duration) time.Time { return fixtureTime.Add(d) }
	ptr := func(t time.Time) *time.Time { return &t }
	yes, no := true, false
	bytesOf := func(s string) []byte { return []byte(s) }
	const (
		p1 = "0195f3a0-0000-7000-8000-000000000001"
		p2 = "0195f3a0-0000-7000-8000-000000000002"
		u1 = "0195f3a0-0000-7000-8000-000000000011"
		u2 = "0195f3a0-0000-7000-8000-000000000012"
		m1 = "0195f3a0-0000-7000-8000-000000000031"
		w1 = "0195f3a0-0000-7000-8000-000000000041"
	)
	later := 10 * 365 * 24 * time.Hour // expiry: years ahead
	hour := fixtureTime.Truncate(time.Hour)
	return []any{
		&store.Settings{AdminTokenHash: bytesOf("admin-token-hash-0123456789abcdef"), Initialized: true,
			MasterKeyCheck: bytesOf("master-key-check-0123456789abcdef")},

		&store.TLSCacheEntry{Key: "acme_account+key", Data: bytesOf("sealed-account-key\x00\xff")},
		&store.TLSCacheEntry{Key: "auth.example.com", Data: bytesOf("sealed-certificate-and-key")},

		&store.Project{ID: p1, Name: "Fixture", CompanyID: "co_fixture", AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"},
			RPID: "example.com", SessionTTLSeconds: 7200, RateLimitPerMinute: 77, DenyCIDRs: []string{"10.0.0.0/8", "2001:db8::/32"},
			CreatedAt: at(0), EmailChange: "direct", SessionRateLimitPerMinute: 33, SessionIdleSeconds: 259200, SessionMaxSeconds: 864000,
			SigningKeyID: "kid-fixture", SigningKey: bytesOf("sealed-signing-key"), PublicKey: bytesOf("public-key"),
			Providers: []store.Provider{{ID: "0195f3a0-0000-7000-8000-000000000051", Name: "google", Type: "google", ClientID: "client-id",
				Secret: bytesOf("sealed-client-secret"), Issuer: "https://accounts.google.com", Scopes: []string{"openid", "email"},
				CreatedAt: at(time.Second), ResponseMode: "form_post", LinkByEmail: &yes}},
			ForwardAuth: &store.ForwardAuth{CookieDomain: "example.com", Rules: []store.ForwardAuthRule{
				{Host: "admin.example.com", PathPrefix: "/api", Policy: "mfa", Groups: []string{"ops"}}}},
			ClientRegistration: "open", DisplayName: "Fixture Brand", LogoURL: "https://cdn.example.com/logo.png", AccentColor: "#123abc"},
		&store.Project{ID: p2, Name: "Second", CreatedAt: at(2 * time.Second), SigningKeyID: "kid-second",
			SigningKey: bytesOf("sealed-signing-key-2"), PublicKey: bytesOf("public-key-2")},

		&store.APIKey{Prefix: "sk_test_fixture01", Hash: bytesOf("api-key-hash-1"), ProjectID: p1, Mode: "test",
			ExpiresAt: ptr(at(later)), Revoked: true, CreatedAt: at(3 * time.Second)},
		&store.APIKey{Prefix: "sk_live_fixture02", Hash: bytesOf("api-key-hash-2"), ProjectID: p2, Mode: "live", CreatedAt: at(4 * time.Second)},

		&store.User{ID: u1, ProjectID: p1, Email: "ada@example.com", ExternalUserID: "legacy-1", FirstName: "Ada", CompanyID: "co_fixture",
			Disabled: true, CreatedAt: at(5 * time.Second), UpdatedAt: at(6 * time.Second), EmailVerified: &yes, Vouched: &no,
			Groups: []string{"admins", "staff"}, Metadata: json.RawMessage(`{"plan": "pro", "seats":12}`)},
		&store.User{ID: u2, ProjectID: p2, Email: "bob@example.com", CreatedAt: at(7 * time.Second), UpdatedAt: at(7 * time.Second)},

		&store.Session{ID: "0195f3a0-0000-7000-8000-000000000021", UserID: u1, ProjectID: p1, Method: "email_otp",
			IssuedAt: at(8 * time.Second), ExpiresAt: at(later), IP: "203.0.113.7", UserAgent: "Fixture/1.0",
			LastSeenAt: at(9 * time.Second), Proofs: []store.Proof{{Method: "otp", At: at(8 * time.Second)}, {Method: "totp", At: at(9 * time.Second)}}},
		&store.Session{ID: "0195f3a0-0000-7000-8000-000000000022", UserID: u2, ProjectID: p2, Method: "passkey",
			IssuedAt: at(10 * time.Second), ExpiresAt: at(later), Proofs: []store.Proof{{Method: "passkey", At: at(10 * time.Second), Synced: true}}},

		&store.RefreshToken{SessionID: "0195f3a0-0000-7000-8000-000000000021", Hash: bytesOf("refresh-hash-1"), ProjectID: p1,
			CreatedAt: at(8 * time.Second), UsedAt: ptr(at(9 * time.Second)), ExpiresAt: at(later)},
		&store.RefreshToken{SessionID: "0195f3a0-0000-7000-8000-000000000021", Hash: bytesOf("refresh-hash-2"), ProjectID: p1,
			CreatedAt: at(9 * time.Second), ExpiresAt: at(later)},

		&store.Code{Kind: "otp", ProjectID: p1, Subject: "ada@example.com", Phone: "+15550100", Email: "ada@example.org",
			Hash: bytesOf("code-hash"), Attempts: 2, CreatedAt: at(11 * time.Second), ExpiresAt: at(later)},

		&store.ThrottleRecord{Kind: "otp", ProjectID: p1, Subject: "ada@example.com",
			Throttle: store.Throttle{Sends: []time.Time{at(11 * time.Second), at(12 * time.Second)}, KeepUntil: at(later)}},
		&store.ThrottleRecord{Kind: "backup_fail", ProjectID: p1, Subject: u1, Throttle: store.Throttle{Sends: []time.Time{at(13 * time.Second)}}},

		&store.MagicLink{Hash: bytesOf("magic-hash-1"), ProjectID: p1, Email: "ada@example.com", RedirectURL: "https://app.example.com/in",
			CreatedAt: at(14 * time.Second), ExpiresAt: at(later), UsedAt: ptr(at(15 * time.Second))},
		&store.MagicLink{Hash: bytesOf("magic-hash-2"), ProjectID: p2, Email: "bob@example.com", CreatedAt: at(16 * time.Second), ExpiresAt: at(later)},

		&store.Device{Key: bytesOf("device-key-1"), Hash: bytesOf("device-hash-1"), UserID: u1, ProjectID: p1,
			CreatedAt: at(17 * time.Second), LastUsedAt: at(18 * time.Second)},

		&store.Factor{UserID: u1, ProjectID: p1, Kind: "totp", Status: "active", Secret: bytesOf("sealed-totp-secret"), Phone: "+15550101",
			LastStep: 59000001, Failures: 1, LockedUntil: at(19 * time.Second), CreatedAt: at(20 * time.Second), EnrolledAt: ptr(at(21 * time.Second))},
		&store.Factor{UserID: u2, ProjectID: p2, Kind: "sms", Status: "pending", Phone: "+15550102", CreatedAt: at(22 * time.Second)},

		&store.BackupCodes{UserID: u1, ProjectID: p1, Hashes: [][]byte{bytesOf("backup-hash-1"), bytesOf("backup-hash-2")},
			Used: []bool{true, false}, CreatedAt: at(23 * time.Second)},

		&store.Grant{Hash: bytesOf("grant-hash-1"), MethodID: m1, ProjectID: p1, ExternalUserID: "bank-user-1", Email: "ada@example.com",
			CreatedAt: at(24 * time.Second), ExpiresAt: at(later), UsedAt: ptr(at(25 * time.Second))},
		&store.Grant{Hash: bytesOf("grant-hash-2"), MethodID: m1, ProjectID: p1, ExternalUserID: "bank-user-2",
			CreatedAt: at(26 * time.Second), ExpiresAt: at(later)},

		&store.Passkey{ID: "Y3JlZGVudGlhbC0x", UserID: u1, ProjectID: p1, Credential: json.RawMessage(`{"id":"Y3JlZGVudGlhbC0x","signCount":4}`),
			CreatedAt: at(27 * time.Second), LastUsedAt: ptr(at(28 * time.Second))},
		&store.Passkey{ID: "Y3JlZGVudGlhbC0y", UserID: u2, ProjectID: p2, Credential: json.RawMessage(`{"id":"Y3JlZGVudGlhbC0y"}`),
			CreatedAt: at(29 * time.Second)},

		&store.Identity{ProjectID: p1, Issuer: "https://accounts.google.com", Subject: "108", UserID: u1, Provider: "google",
			CreatedAt: at(30 * time.Second)},

		&store.Challenge{ID: "0195f3a0-0000-7000-8000-000000000061", ProjectID: p1, Kind: "register", UserID: u1, Email: "ada@example.com",
			Session: json.RawMessage(`{"challenge":"abc","userVerification":"preferred"}`), ExpiresAt: at(later)},
		&store.Challenge{ID: "0195f3a0-0000-7000-8000-000000000062", ProjectID: p2, Kind: "login",
			Session: json.RawMessage(`{"challenge":"def"}`), ExpiresAt: at(later)},

		&store.OAuthFlow{ID: "5d0a8f0c2b7e4a91c3f6e8d7b2a1c0f95e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b", ProjectID: p1, Kind: store.OAuthFlowState,
			Payload: bytesOf(`{"provider":"google","redirectUrl":"https://app.example.com/in","verifier":"v"}`), ExpiresAt: at(later)},
		&store.OAuthFlow{ID: "7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b", ProjectID: p2, Kind: store.OAuthFlowCode,
			Payload: bytesOf("{\"provider\": \"google\",\n \"email\":\"bob@example.com\"}"), ExpiresAt: at(later)},

		&store.ExternalMethod{ID: m1, ProjectID: p1, Method: "bank", Pattern: "direct", Status: "active",
			Secret: bytesOf("sealed-method-secret"), CreatedAt: at(31 * time.Second)},

		&store.Template{ProjectID: p1, Kind: "otp", Locale: "en", Subject: "Your code {{.Code}}", Text: "Code: {{.Code}}",
			HTML: "<p>Code: <b>{{.Code}}</b></p>", UpdatedAt: at(32 * time.Second)},
		&store.Template{ProjectID: p1, Kind: "otp", Locale: "pt-BR", Subject: "Seu código {{.Code}}", Text: "Código: {{.Code}}",
			HTML: "<p>Código: {{.Code}}</p>", UpdatedAt: at(33 * time.Second)},
		&store.Template{ProjectID: p1, Kind: store.TemplateKindPage, Locale: "pt", Text: `{"sign_in_title":"Entrar"}`, UpdatedAt: at(35 * time.Second)},
		&store.Template{ProjectID: p2, Kind: "magic_link", Locale: "de", Subject: "Anmelden", Text: "{{.Link}}", HTML: "<a href=\"{{.Link}}\">Anmelden</a>",
			UpdatedAt: at(34 * time.Second)},

		&store.OIDCKey{ProjectID: p1, ID: "kid-rs-fixture", Alg: "RS256", PrivateKey: bytesOf("sealed-rsa-key"),
			PublicJWK: bytesOf(`{"kty":"RSA","kid":"kid-rs-fixture"}`), CreatedAt: at(34 * time.Second), RetiredAt: at(35 * time.Second)},
		&store.OIDCKey{ProjectID: p1, ID: "kid-rs-fixture-2", Alg: "RS256", PrivateKey: bytesOf("sealed-rsa-key-2"),
			PublicJWK: bytesOf(`{"kty":"RSA","kid":"kid-rs-fixture-2"}`), CreatedAt: at(35 * time.Second)},
		&store.OIDCKey{ProjectID: p2, ID: "kid-es-fixture", Alg: "ES256", PrivateKey: bytesOf("sealed-ec-key"),
			PublicJWK: bytesOf(`{"kty":"EC","kid":"kid-es-fixture"}`), CreatedAt: at(35 * time.Second)},

		&store.OIDCClient{ProjectID: p1, ID: "0195f3a0-0000-7000-8000-000000000091", Name: "Grafana", Type: "confidential",
			SecretHash: bytesOf("client-secret-hash"), RedirectURIs: []string{"https://grafana.example.com/login/generic_oauth"},
			PostLogoutRedirectURIs: []string{"https://grafana.example.com/"}, BackchannelLogoutURI: "https://grafana.example.com/bcl",
			GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"groups"}, FirstParty: true, RequireMFA: true,
			IDTokenAlg: "ES256", AccessTokenLifetimeSeconds: 900, RefreshTokenLifetimeSeconds: 86400, RefreshTokenIdleSeconds: 3600,
			Claims: map[string]string{"role": "metadata.role"}, CreatedAt: at(36 * time.Second), UpdatedAt: at(37 * time.Second)},
		&store.OIDCClient{ProjectID: p2, ID: "0195f3a0-0000-7000-8000-000000000092", Name: "CLI", Type: "public",
			RedirectURIs: []string{"http://127.0.0.1/callback"}, GrantTypes: []string{"authorization_code"}, IDTokenAlg: "RS256",
			AccessTokenLifetimeSeconds: 3600, RefreshTokenLifetimeSeconds: 2592000, RefreshTokenIdleSeconds: 604800,
			CreatedAt: at(38 * time.Second), UpdatedAt: at(38 * time.Second), Registered: true},

		&store.OIDCAuthRequest{ProjectID: p1, ID: "ar_fixture_1", ClientID: "0195f3a0-0000-7000-8000-000000000091",
			RedirectURI: "https://grafana.example.com/login/generic_oauth", Scopes: []string{"openid", "email"}, State: "st",
			Nonce: "no", ResponseType: "code", ResponseMode: "query", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
			CodeChallengeMethod: "S256", Prompt: []string{"login"}, MaxAge: ptrTo(int64(0)), LoginHint: "ada@example.com",
			UILocales: []string{"pt-BR", "en"}, HintUserID: u1, CreatedAt: at(39 * time.Second), UserID: u1, SessionID: "0195f3a0-0000-7000-8000-000000000021",
			AuthTime: at(40 * time.Second), AMR: []string{"otp"}, ACR: "urn:latchkey:loa:1", Done: true,
			CodeHash: bytesOf("code-hash"), CodeExpiresAt: at(41 * time.Second), GrantID: "gr_fixture_1", ExpiresAt: at(later)},
		&store.OIDCAuthRequest{ProjectID: p2, ID: "ar_fixture_2", ClientID: "0195f3a0-0000-7000-8000-000000000092",
			RedirectURI: "http://127.0.0.1/callback", Scopes: []string{"openid"}, ResponseType: "code",
			CreatedAt: at(42 * time.Second), ExpiresAt: at(later)},
		&store.OIDCGrant{ProjectID: p1, ID: "gr_fixture_1", ClientID: "0195f3a0-0000-7000-8000-000000000091", UserID: u1,
			SessionID: "0195f3a0-0000-7000-8000-000000000021", Scopes: []string{"openid", "email"}, AMR: []string{"otp", "mfa"}, ACR: "urn:latchkey:loa:2",
			AuthTime: at(40 * time.Second), CreatedAt: at(43 * time.Second), ExpiresAt: at(later), RevokedAt: at(44 * time.Second),
			RevokedFor: "authorization code replayed"},
		&store.OIDCRefreshToken{ProjectID: p1, Hash: bytesOf("oidc-refresh-hash-1"), GrantID: "gr_fixture_1",
			ClientID: "0195f3a0-0000-7000-8000-000000000091", Scopes: []string{"openid", "offline_access"},
			CreatedAt: at(45 * time.Second), RotatedAt: at(46 * time.Second), ExpiresAt: at(later)},
		&store.OIDCRefreshToken{ProjectID: p1, Hash: bytesOf("oidc-refresh-hash-2"), GrantID: "gr_fixture_1",
			ClientID: "0195f3a0-0000-7000-8000-000000000091", Scopes: []string{"openid"}, CreatedAt: at(46 * time.Second), ExpiresAt: at(later)},
		&store.OIDCRevokedToken{ProjectID: p1, JTI: "gr_fixture_1.1790000000.abcdefghijkl", ClientID: "0195f3a0-0000-7000-8000-000000000091",
			RevokedAt: at(47 * time.Second), ExpiresAt: at(later)},
		&store.OIDCConsent{ProjectID: p1, UserID: u1, ClientID: "0195f3a0-0000-7000-8000-000000000091",
			Scopes: []string{"openid", "email", "offline_access"}, GrantedAt: at(42 * time.Second), UpdatedAt: at(48 * time.Second)},

		&store.OIDCDeviceAuth{ProjectID: p1, Hash: bytesOf("oidc-device-hash-1"), UserCode: "BCDF-GHJK",
			ClientID: "0195f3a0-0000-7000-8000-000000000091", Scopes: []string{"openid", "offline_access"}, State: store.DeviceAuthApproved,
			UserID: "0195f3a0-0000-7000-8000-000000000011", SessionID: "0195f3a0-0000-7000-8000-000000000021",
			AuthTime: at(48 * time.Second), AMR: []string{"otp"}, ACR: "urn:latchkey:loa:1", GrantID: "gr_fixture_1",
			CreatedAt: at(47 * time.Second), LastPollAt: at(49 * time.Second), ExpiresAt: at(later)},
		&store.OIDCDeviceAuth{ProjectID: p1, Hash: bytesOf("oidc-device-hash-2"), UserCode: "LMNP-QRST",
			ClientID: "0195f3a0-0000-7000-8000-000000000091", State: store.DeviceAuthPending, CreatedAt: at(48 * time.Second), ExpiresAt: at(later)},

		&store.Webhook{ID: w1, ProjectID: p1, URL: "https://hooks.example.com/latchkey", Secret: bytesOf("sealed-webhook-secret"),
			EventTypes: []string{"user.created", "session.created"}, Mode: "test", CreatedAt: at(35 * time.Second)},

		&store.Job{Seq: 7, WebhookID: w1, ProjectID: p1, EventID: "evt_fixture_1", EventType: "user.created", Body: bytesOf(`{"id":"evt_fixture_1"}`),
			Attempt: 2, CreatedAt: at(36 * time.Second), NextAttemptAt: at(37 * time.Second)},
		&store.Job{Seq: 9, WebhookID: w1, ProjectID: p1, EventID: "evt_fixture_2", EventType: "session.created", Body: bytesOf(`{"id":"evt_fixture_2"}`),
			CreatedAt: at(38 * time.Second), NextAttemptAt: at(38 * time.Second)},

		&store.Delivery{ID: "0195f3a0-0000-7000-8000-000000000071", WebhookID: w1, EventID: "evt_fixture_1", EventType: "user.created",
			Attempt: 1, Status: "failed", ResponseStatus: 500, Error: "500 Internal Server Error", DurationMS: 42,
			CreatedAt: at(39 * time.Second), NextAttemptAt: ptr(at(40 * time.Second))},
		&store.Delivery{ID: "0195f3a0-0000-7000-8000-000000000072", WebhookID: w1, EventID: "evt_fixture_0", EventType: "user.created",
			Attempt: 1, Status: "succeeded", ResponseStatus: 204, DurationMS: 7, CreatedAt: at(41 * time.Second)},

		&store.Event{ID: "evt_fixture_3", ProjectID: p1, Type: "user.updated", CreatedAt: at(42 * time.Second), Data: json.RawMessage(`{"user_id":"u1"}`)},

		&store.Mail{ProjectID: p1, To: "ada@example.com", Kind: "otp", Body: []byte{1, 2, 3, 0, 255}, Attempts: 2, LastError: "421 try later",
			CreatedAt: at(43 * time.Second), NextAttemptAt: at(44 * time.Second)},
		&store.Mail{ProjectID: p2, To: "bob@example.com", Kind: "magic", Body: []byte("sealed"), CreatedAt: at(45 * time.Second),
			NextAttemptAt: at(45 * time.Second)},

		&store.AuthEvent{ID: "0195f3a0-0000-7000-8000-000000000081", ProjectID: p1, UserID: u1, Email: "ada@example.com", Method: "email_otp",
			Action: "verify", Success: true, IP: "203.0.113.7", UserAgent: "Fixture/1.0", CreatedAt: at(46 * time.Second)},
		&store.AuthEvent{ID: "0195f3a0-0000-7000-8000-000000000082", ProjectID: p1, Email: "eve@example.com", Method: "email_otp",
			Action: "verify", FailureCode: "invalid_code", IP: "2001:db8::7", CreatedAt: at(47 * time.Second)},
		&store.AuthEvent{ID: "0195f3a0-0000-7000-8000-000000000083", Method: "admin", Action: "sign_in", FailureCode: "",
			CreatedAt: at(47 * time.Second)},

		&store.EventCount{Scope: p1, Hour: hour.Unix() / 3600, Kind: "+", N: 5},
		&store.EventCount{Scope: "*", Hour: hour.Unix() / 3600, Kind: "invalid_code", N: 3},
		&store.EventCount{Scope: "", Hour: hour.Unix()/3600 - 1, Kind: "?", N: 1},

		&store.SuppressedCount{Hour: hour, ProjectID: p1, Method: "magic_link", Action: "verify", FailureCode: "invalid_token", N: 15},
	}
}

// storeAssigned are the fields the target store assigns again (the
// Mover contract): left out of every comparison, and not required to be
// set by the fixture.
var storeAssigned = map[string]bool{"Delivery.Seq": true, "Event.Seq": true, "Mail.ID": true, "AuthEvent.Pos": true}

// assigned reports whether the field at path, or one it is part of, is
// in storeAssigned.
func assigned(path string) bool {
	for p := path; ; {
		if storeAssigned[p] {
			return true
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// WriteFixture writes Fixture's records into db, which must hold no data,
// with db's Import (the only writer that keeps every kind as it is: the
// Tx methods of events count them), and returns them (new values, as
// Fixture makes them).
func WriteFixture(t testing.TB, db store.DB) []any {
	t.Helper()
	recs := Fixture()
	imp, err := db.Import(context.Background())
	if err != nil {
		t.Fatalf("write the fixture: %v", err)
	}
	for _, rec := range recs {
		if err := imp.Add(rec); err != nil {
			imp.Rollback()
			t.Fatalf("write the fixture: %s: %v", store.RecordName(rec), err)
		}
	}
	if err := imp.Commit(); err != nil {
		t.Fatalf("write the fixture: commit: %v", err)
	}
	return Fixture()
}

// CheckFixture fails t unless the fixture holds a record of every kind
// of store.RecordKinds, in its order, and sets every field of each kind
// (nested ones too) on at least one of its records, the fields the
// store assigns excepted: a kind or a field added to the records without
// being added to the fixture is not tested by a copy.
func CheckFixture(t testing.TB) {
	t.Helper()
	kinds := store.RecordKinds()
	byKind := map[string][]any{}
	last := -1
	for _, rec := range Fixture() {
		name := store.RecordName(rec)
		i := slices.Index(kinds, name)
		if i < 0 {
			t.Errorf("the fixture holds a %s, which is not a record kind", name)
			continue
		}
		if i < last {
			t.Errorf("the fixture passes a %s after a %s: not in the order of store.RecordKinds", name, kinds[last])
		}
		last = max(last, i)
		byKind[name] = append(byKind[name], rec)
	}
	for _, kind := range kinds {
		recs := byKind[kind]
		if len(recs) == 0 {
			t.Errorf("the fixture holds no %s", kind)
			continue
		}
		set := map[string]bool{}
		for _, rec := range recs {
			setFields(reflect.ValueOf(rec).Elem(), kind, set)
		}
		for _, f := range fieldPaths(reflect.TypeOf(recs[0]).Elem(), kind) {
			if !set[f] && !assigned(f) {
				t.Errorf("no %s of the fixture sets %s", kind, f)
			}
		}
	}
}

// isLeaf reports whether values of t are compared whole: anything but a
// struct (time.Time is a leaf), a pointer to one or a slice of them.
func isLeaf(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return true // []byte
		}
		t = t.Elem()
	}
	return t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]()
}

// structOf is the struct type under t's pointers and slices.
func structOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

// fieldPaths lists the exported fields of struct type t, as path.Field,
// nested structs' fields as path.Field.Sub (embedded ones under their
// type's name).
func fieldPaths(t reflect.Type, path string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		p := path + "." + f.Name
		if isLeaf(f.Type) {
			out = append(out, p)
		} else {
			out = append(out, fieldPaths(structOf(f.Type), p)...)
		}
	}
	return out
}

// setFields adds to set the paths (as fieldPaths names them) of the
// fields of struct value v that are not zero.
func setFields(v reflect.Value, path string, set map[string]bool) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		p := path + "." + f.Name
		fv := v.Field(i)
		if isLeaf(f.Type) {
			if !fv.IsZero() && !(fv.Kind() == reflect.Slice && fv.Len() == 0) {
				set[p] = true
			}
			continue
		}
		eachStruct(fv, func(s reflect.Value) { setFields(s, p, set) })
	}
}

// eachStruct calls fn with each struct value under v's pointers and
// slices.
func eachStruct(v reflect.Value, fn func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			eachStruct(v.Elem(), fn)
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachStruct(v.Index(i), fn)
		}
	case reflect.Struct:
		fn(v)
	}
}

// Records returns what db's Export passes, by kind (store.RecordName),
// each record as Normalize makes it; it fails t when Export passes a
// value that is not a record or passes the kinds out of the order of
// store.RecordKinds.
func Records(t testing.TB, db store.DB) map[string][]string {
	t.Helper()
	kinds := store.RecordKinds()
	var recs []any
	last := -1
	err := db.Export(context.Background(), func(rec any) error {
		name := store.RecordName(rec)
		i := slices.Index(kinds, name)
		switch {
		case i < 0:
			t.Errorf("Export passed a %s, which is not a record kind (store.RecordKinds)", name)
		case i < last:
			t.Errorf("Export passed a %s after a %s: not in the order of store.RecordKinds", name, kinds[last])
		}
		last = max(last, i)
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return Normalize(t, recs)
}

// Normalize returns recs by kind (store.RecordName), each as JSON with
// the fields the target store assigns again left out (Delivery.Seq,
// Event.Seq, Mail.ID, AuthEvent.Pos), times in UTC and empty lists as
// nil (what a backend may not tell apart), each kind's in sorted order.
// recs are not changed.
func Normalize(t testing.TB, recs []any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, rec := range recs {
		name := store.RecordName(rec)
		// A deep copy through JSON (every record kind encodes whole, but
		// AuthEvent.Pos, left out anyway).
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cp := reflect.New(reflect.TypeOf(rec).Elem())
		if err := json.Unmarshal(b, cp.Interface()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch r := cp.Interface().(type) {
		case *store.Delivery:
			r.Seq = 0
		case *store.Event:
			r.Seq = 0
		case *store.Mail:
			r.ID = 0
		}
		normalize(cp.Elem())
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // templates' HTML, readable in messages
		if err := enc.Encode(cp.Interface()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = append(out[name], strings.TrimSuffix(buf.String(), "\n"))
	}
	for _, list := range out {
		sort.Strings(list)
	}
	return out
}

// normalize sets the times under v to UTC and its empty slices to nil.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.SetZero()
			}
			return
		}
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	case reflect.Struct:
		if tm, ok := v.Interface().(time.Time); ok {
			if v.CanSet() {
				v.Set(reflect.ValueOf(tm.UTC()))
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	}
}

// Counts returns how many records of each kind recs holds, as
// Normalize or Records returns them.
func Counts(recs map[string][]string) map[string]int {
	out := map[string]int{}
	for kind, list := range recs {
		out[kind] = len(list)
	}
	return out
}

// SameRecords fails t for every kind whose records in got are not those
// in want: how many there are, then which differ; what names what got
// holds ("the copy").
func SameRecords(t testing.TB, what string, got, want map[string][]string) {
	t.Helper()
	kinds := map[string]bool{}
	for k := range got {
		kinds[k] = true
	}
	for k := range want {
		kinds[k] = true
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, kind := range names {
		g, w := got[kind], want[kind]
		if len(g) != len(w) {
			t.Errorf("%s holds %d %s, want %d", what, len(g), kind, len(w))
		}
		if missing, extra := missingFrom(w, g), missingFrom(g, w); len(missing) > 0 || len(extra) > 0 {
			t.Errorf("%s: %s records differ:\n missing %s\n instead %s", what, kind, strings.Join(missing, "\n         "),
				strings.Join(extra, "\n         "))
		}
	}
}

// missingFrom returns the strings of a not in b (both sorted), a string that is
// in a twice and in b once counting once.
func missingFrom(a, b []string) []string {
	var out []string
	j := 0
	for _, s := range a {
		for j < len(b) && b[j] < s {
			j++
		}
		if j < len(b) && b[j] == s {
			j++
			continue
		}
		out = append(out, s)
	}
	return out
}

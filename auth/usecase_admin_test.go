package auth_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// TestProjectAdmin: projects are created with their settings (checked),
// listed, changed and deleted; a deleted project's keys stop working and
// its id is 404.
func TestProjectAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	p, err := ts.CreateProject(ctx, auth.ProjectInput{Name: ptr("Shop"), AllowedOrigins: &[]string{"https://shop.example.com"}})
	ok(t, err)
	v := ts.ViewProject(p)
	if v.Name != "Shop" || len(v.AllowedOrigins) != 1 || v.SessionTTLSeconds != auth.DefaultSessionTTL || v.RateLimitPerMinute != 100 || v.CompanyID == "" {
		t.Fatalf("project %+v, want the defaults filled in", v)
	}
	list, err := ts.Projects(ctx)
	ok(t, err)
	if len(list) != 2 {
		t.Fatalf("%d projects, want the first start's and Shop", len(list))
	}
	for _, bad := range []auth.ProjectInput{
		{},
		{Name: ptr("x"), AllowedOrigins: &[]string{"https://shop.example.com/path"}},
		{Name: ptr("x"), SessionTTLSeconds: ptr(10)},
		{Name: ptr("x"), EmailChange: ptr("sometimes")},
		{Name: ptr("x"), DenyCIDRs: &[]string{"not a cidr"}},
	} {
		_, err := ts.CreateProject(ctx, bad)
		wantErr(t, err, auth.ErrValidation, auth.CatValidation)
	}
	up, err := ts.UpdateProject(ctx, p.ID, auth.ProjectInput{Name: ptr("Shop 2"), SessionTTLSeconds: ptr(3600)})
	ok(t, err)
	if up.Name != "Shop 2" || up.SessionTTLSeconds != 3600 || up.AllowedOrigins[0] != "https://shop.example.com" {
		t.Fatalf("updated %+v, want the name and lifetime changed, the rest kept", up)
	}
	key, _, err := ts.CreateKey(ctx, auth.KeyInput{ProjectID: &p.ID, Mode: "live"})
	ok(t, err)
	if _, err := ts.AuthenticateKey(ctx, "Bearer "+key); err != nil {
		t.Fatal(err)
	}
	ok(t, ts.DeleteProject(ctx, p.ID))
	_, err = ts.Project(ctx, p.ID)
	wantErr(t, err, auth.ErrProjectNotFound, "")
	if _, err := ts.AuthenticateKey(ctx, "Bearer "+key); err == nil {
		t.Fatal("a deleted project's key still authenticates")
	}
	wantErr(t, ts.DeleteProject(ctx, p.ID), auth.ErrProjectNotFound, "")
	_, err = ts.UpdateProject(ctx, "nope", auth.ProjectInput{Name: ptr("x")})
	wantErr(t, err, auth.ErrProjectNotFound, "")
}

// TestKeyValidation: the decided validation order and its codes, a
// key's life (revoked, expired, without a project) and the per-key rate.
func TestKeyValidation(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	live, k, err := ts.CreateKey(ctx, auth.KeyInput{ProjectID: &ts.project.ID, Mode: "live"})
	ok(t, err)
	if !strings.HasPrefix(live, "sk_live_") || len(live) != 49 || k.Prefix != live[:auth.KeyPrefixLen] {
		t.Fatalf("key %q prefix %q", live, k.Prefix)
	}
	c, err := ts.AuthenticateKey(ctx, "Bearer "+live)
	ok(t, err)
	if c.Project.ID != ts.project.ID || c.Mode != "live" || c.Prefix != k.Prefix {
		t.Fatalf("caller %+v", c)
	}
	soon := ts.clock.Now().Add(time.Hour).Format(time.RFC3339)
	expiring, _, err := ts.CreateKey(ctx, auth.KeyInput{ProjectID: &ts.project.ID, Mode: "test", ExpiresAt: &soon})
	ok(t, err)
	orphan, _, err := ts.CreateKey(ctx, auth.KeyInput{Mode: "test"})
	ok(t, err)
	revoked, rk, err := ts.CreateKey(ctx, auth.KeyInput{ProjectID: &ts.project.ID, Mode: "test"})
	ok(t, err)
	ok(t, ts.RevokeKey(ctx, rk.Prefix))
	ts.clock.Advance(time.Hour)

	cases := []struct {
		name, header string
		want         *auth.Error
	}{
		{"no header", "", auth.ErrMissingAPIKey},
		{"not bearer", "Basic " + live, auth.ErrMissingAPIKey},
		{"no prefix", "Bearer pk_live_abcdefghijklmnopqrstuvwxyz", auth.ErrInvalidFormat},
		{"too short", "Bearer sk_live_abc", auth.ErrInvalidFormat},
		{"unknown prefix", "Bearer sk_live_ZZZZZZZZ_" + strings.Repeat("a", 32), auth.ErrAPIKeyNotFound},
		{"wrong secret", "Bearer " + live[:auth.KeyPrefixLen+1] + strings.Repeat("b", 32), auth.ErrHashMismatch},
		{"revoked", "Bearer " + revoked, auth.ErrAPIKeyRevoked},
		{"expired", "Bearer " + expiring, auth.ErrAPIKeyExpired},
		{"no project", "Bearer " + orphan, auth.ErrInvalidAPIKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ts.AuthenticateKey(ctx, tc.header)
			wantErr(t, err, tc.want, "")
		})
	}

	keys, err := ts.Keys(ctx, ts.project.ID)
	ok(t, err)
	if len(keys) != 4 { // the first start's, live, expiring, revoked
		t.Fatalf("%d keys listed, want 4", len(keys))
	}
	wantErr(t, ts.RevokeKey(ctx, "sk_test_nothere1"), auth.ErrKeyNotFound, "")
	_, _, err = ts.CreateKey(ctx, auth.KeyInput{Mode: "prod"})
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)

	for i := range ts.project.RateLimitPerMinute {
		if res := ts.Allow(c); !res.Allowed || res.Remaining != ts.project.RateLimitPerMinute-1-i {
			t.Fatalf("request %d: %+v", i+1, res)
		}
	}
	if res := ts.Allow(c); res.Allowed || res.RetryAfter <= 0 {
		t.Fatalf("over the rate: %+v, want refused with a wait", res)
	}
	ts.clock.Advance(time.Minute)
	if res := ts.Allow(c); !res.Allowed {
		t.Fatalf("a minute later: %+v", res)
	}
}

// TestAdminToken: the configured token passes; a wrong or missing one is
// 401 UNAUTHORIZED, and ten failures a minute from one address 429.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	ok(t, ts.CheckAdmin("Bearer adm_usecase_test_token_0123"))
	wantErr(t, ts.CheckAdmin("Bearer adm_wrong"), auth.ErrUnauthorized, "")
	wantErr(t, ts.CheckAdmin(""), auth.ErrUnauthorized, "")
	for range auth.AdminMaxFailures {
		wantErr(t, ts.CheckAdminFrom("Bearer adm_wrong", "203.0.113.9"), auth.ErrUnauthorized, "")
	}
	e := wantErr(t, ts.CheckAdminFrom("Bearer adm_usecase_test_token_0123", "203.0.113.9"), auth.ErrAdminThrottled, "")
	if e.RetryAfter <= 0 {
		t.Fatal("throttled without a wait")
	}
	ok(t, ts.CheckAdminFrom("Bearer adm_usecase_test_token_0123", "203.0.113.10"))
}

// TestExternalMethodAdmin: a method name is unique per project and
// checked; its status toggles; lists never show the secret.
func TestExternalMethodAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	m, err := ts.CreateMethod(ctx, ts.project.ID, "bank", "direct")
	ok(t, err)
	_, err = ts.CreateMethod(ctx, ts.project.ID, "bank", "webhook")
	wantErr(t, err, auth.ErrMethodExists, "")
	_, err = ts.CreateMethod(ctx, ts.project.ID, "Bad Name", "direct")
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)
	_, err = ts.CreateMethod(ctx, ts.project.ID, "other", "carrier-pigeon")
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)
	_, err = ts.CreateMethod(ctx, "nope", "bank", "direct")
	wantErr(t, err, auth.ErrProjectNotFound, "")
	off, err := ts.SetMethodStatus(ctx, m.ID, "inactive")
	ok(t, err)
	if off.Status != "inactive" || off.Secret != "" {
		t.Fatalf("after disabling: %+v", off)
	}
	_, err = ts.SetMethodStatus(ctx, "nope", "active")
	wantErr(t, err, auth.ErrMethodNotFound, "")
	list, err := ts.Methods(ctx, ts.project.ID)
	ok(t, err)
	if len(list) != 1 || list[0].Secret != "" {
		t.Fatalf("methods %+v", list)
	}
}

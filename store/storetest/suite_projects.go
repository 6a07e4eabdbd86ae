package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"latchkey/store"
)

// t0 has nanoseconds, which a store that keeps microseconds would lose.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

// Projects tests the projects and their API keys (store.Projects):
// exact round trips, lists in byte order, lookups of ids that cannot be
// text, and DeleteProject with everything it takes and leaves.
func (s Suite) Projects(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.projectsRoundTrip},
		{"Lists", s.projectsLists},
		{"Delete", s.projectsDelete},
	})
}

// projectsRoundTrip: every field of projects, their sign-in providers
// and keys comes back exactly: times to the nanosecond and zero times as
// zero, nil pointers as nil, a pointer to the zero time as one, bytes
// that are not UTF-8; a project rewritten without providers has none.
func (s Suite) projectsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	yes, no := true, false
	exp, zero := t0.Add(365*24*time.Hour), time.Time{}
	providers := []store.Provider{
		{ID: "pr1", Name: "google", Type: "google", ClientID: "cid", Secret: []byte{0, 1, 2, 255}, Issuer: "https://accounts.google.com",
			Scopes: []string{"openid", "email"}, CreatedAt: t0, ResponseMode: "form_post", LinkByEmail: &yes},
		{ID: "pr2", Name: "github", Type: "github", ClientID: "gh", Secret: []byte("sealed"), CreatedAt: t0, LinkByEmail: &no},
		{ID: "pr3", Name: "corp", Type: "oidc", ClientID: "c", Secret: []byte("sealed"), Issuer: "https://idp.example", CreatedAt: t0},
	}
	projects := []*store.Project{
		{ID: "p-full", Name: "Full ✓", CompanyID: "c", AllowedOrigins: []string{"https://a.example", ""}, RPID: "a.example",
			SessionTTLSeconds: 86400, RateLimitPerMinute: 1 << 40, DenyCIDRs: []string{"10.0.0.0/8"}, CreatedAt: t0,
			EmailChange: "direct", SigningKeyID: "kid", SigningKey: []byte{0, 1, 2, 255}, PublicKey: []byte("pub"), SessionRateLimitPerMinute: 77,
			SessionIdleSeconds: 7200, SessionMaxSeconds: 86400, Providers: providers,
			ForwardAuth: &store.ForwardAuth{CookieDomain: "a.example", Rules: []store.ForwardAuthRule{
				{Host: "*.a.example", PathPrefix: "/admin", Policy: "mfa", Groups: []string{"ops", "été"}},
				{Host: "pub.a.example", Policy: "bypass"}}},
			ClientRegistration: "open", DisplayName: "Full <Brand> ✓", LogoURL: "https://cdn.a.example/logo.svg?v=2", AccentColor: "#0a7f3e"},
		{ID: "p-empty", ForwardAuth: &store.ForwardAuth{Rules: []store.ForwardAuthRule{}}, AllowedOrigins: []string{}, DenyCIDRs: []string{}, SigningKey: []byte{}, PublicKey: []byte{}, Providers: []store.Provider{}},
		{ID: "p-nil"},
	}
	complete(t, projects[0])
	complete(t, &providers[0])
	keys := []*store.APIKey{
		{Prefix: "sk_live_a", Hash: []byte{9, 0, 9}, ProjectID: "p-full", Mode: "live", ExpiresAt: &exp, Revoked: true, CreatedAt: t0},
		{Prefix: "sk_test_b", Hash: []byte{}, Mode: "test", ExpiresAt: &zero},
		{Prefix: "sk_test_c", Mode: "test"},
	}
	complete(t, keys[0])
	update(t, db, func(tx store.Tx) error {
		for _, p := range projects {
			if err := tx.PutProject(p); err != nil {
				return fmt.Errorf("project %s: %w", p.ID, err)
			}
		}
		for _, k := range keys {
			if err := tx.PutAPIKey(k); err != nil {
				return fmt.Errorf("key %s: %w", k.Prefix, err)
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range projects {
			got, err := tx.Project(want.ID)
			if err != nil {
				return err
			}
			if err := diff("project "+want.ID, got, want); err != nil {
				return err
			}
		}
		for _, want := range keys {
			got, err := tx.APIKey(want.Prefix)
			if err != nil {
				return err
			}
			if err := diff("key "+want.Prefix, got, want); err != nil {
				return err
			}
		}
		return nil
	})
	// Replaced whole: without its providers and forward-auth.
	p := *projects[0]
	p.Providers, p.ForwardAuth = nil, nil
	update(t, db, func(tx store.Tx) error { return tx.PutProject(&p) })
	view(t, db, func(tx store.Tx) error {
		got, err := tx.Project(p.ID)
		if err == nil && got.Providers != nil {
			err = fmt.Errorf("providers = %+v, want nil", got.Providers)
		}
		if err == nil && got.ForwardAuth != nil {
			err = fmt.Errorf("forwardAuth = %+v, want nil", got.ForwardAuth)
		}
		return err
	})
}

// projectsLists: projects and keys come in id and prefix byte order, and
// nil when there are none; lookups by ids that cannot be text (a NUL,
// broken UTF-8: from URLs and headers) find nothing without an error,
// and the transaction goes on.
func (s Suite) projectsLists(t *testing.T) {
	db := s.open(t, store.Options{})
	view(t, db, func(tx store.Tx) error {
		ps, err1 := tx.Projects()
		ks, err2 := tx.APIKeys("")
		if ps != nil || ks != nil || err1 != nil || err2 != nil {
			return fmt.Errorf("empty lists: %v %v %v %v", ps, ks, err1, err2)
		}
		return nil
	})
	ids := []string{"b", "B", "a", "_", "é", "e", "Z"}
	update(t, db, func(tx store.Tx) error {
		for _, id := range ids {
			if err := tx.PutProject(&store.Project{ID: id}); err != nil {
				return err
			}
			if err := tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_" + id, ProjectID: "p", Mode: "test"}); err != nil {
				return err
			}
		}
		return tx.PutAPIKey(&store.APIKey{Prefix: "sk_live_0", ProjectID: "other", Mode: "live"})
	})
	sort.Strings(ids)
	view(t, db, func(tx store.Tx) error {
		ps, err := tx.Projects()
		if err != nil {
			return err
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			return fmt.Errorf("Projects in %v, want %v", got, ids)
		}
		ks, err := tx.APIKeys("p")
		if err != nil || len(ks) != len(ids) {
			return fmt.Errorf("APIKeys(p): %d, %v", len(ks), err)
		}
		for i, k := range ks {
			if k.Prefix != "sk_test_"+ids[i] {
				return fmt.Errorf("key %d is %s, want sk_test_%s", i, k.Prefix, ids[i])
			}
		}
		all, _ := tx.APIKeys("")
		if len(all) != len(ids)+1 || all[0].Prefix != "sk_live_0" {
			return fmt.Errorf("APIKeys(\"\"): %d keys, first %s", len(all), all[0].Prefix)
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Project("b")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"Project":       wantNotFound(tx.Project(bad)),
			"APIKey":        wantNotFound(tx.APIKey(bad)),
			"APIKeys":       wantNone(tx.APIKeys(bad)),
			"DeleteProject": wantNotFound(tx.DeleteProject(bad)),
		}
	})
}

// projectsDelete: DeleteProject removes the project and every row that
// belongs to it (projectRows: its users with what DeleteUser removes, a
// link left without its user, codes and histories of the project and of
// its external methods, links, devices, challenges, sign-ins with
// providers in flight, methods, grants, webhooks with their jobs and
// deliveries, templates), detaches its keys and returns their prefixes,
// keeps the history (events, counters, outbox, mail) and another
// project's rows, and answers ErrNotFound for a project it does not
// know, changing nothing.
func (s Suite) projectsDelete(t *testing.T) {
	db := s.open(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
		if err := fillProject(tx, "doomed"); err != nil {
			return err
		}
		return fillProject(tx, "kept")
	})
	there := func(name string) map[string]bool {
		out := map[string]bool{}
		view(t, db, func(tx store.Tx) error {
			for _, r := range projectRows {
				ok, err := r.there(tx, name)
				if err != nil {
					return fmt.Errorf("%s of %s: %w", r.what, name, err)
				}
				out[r.what] = ok
			}
			return nil
		})
		return out
	}
	for _, name := range []string{"doomed", "kept"} {
		for what, ok := range there(name) {
			if !ok {
				t.Fatalf("the fixture wrote no %s for %s", what, name)
			}
		}
	}
	update(t, db, func(tx store.Tx) error {
		if _, err := tx.DeleteProject("nope"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("DeleteProject(unknown) = %v, want ErrNotFound", err)
		}
		detached, err := tx.DeleteProject("p-doomed")
		if err != nil {
			return err
		}
		slices.Sort(detached)
		if fmt.Sprint(detached) != "[sk_test_doomed sk_test_doomed2]" {
			return fmt.Errorf("detached %v, want [sk_test_doomed sk_test_doomed2]", detached)
		}
		return nil
	})
	got := there("doomed")
	for _, r := range projectRows {
		if got[r.what] != r.keptByProject {
			t.Errorf("after DeleteProject: %s there: %v, want %v", r.what, got[r.what], r.keptByProject)
		}
	}
	for what, ok := range there("kept") {
		if !ok {
			t.Errorf("another project's %s went with the deleted project", what)
		}
	}
	view(t, db, func(tx store.Tx) error {
		for _, prefix := range []string{"sk_test_doomed", "sk_test_doomed2"} {
			if k, err := tx.APIKey(prefix); err != nil || k.ProjectID != "" {
				t.Errorf("key %s = %+v, %v; want it kept without a project", prefix, k, err)
			}
		}
		if k, err := tx.APIKey("sk_test_kept"); err != nil || k.ProjectID != "p-kept" {
			t.Errorf("another project's key = %+v, %v", k, err)
		}
		if ks, err := tx.APIKeys("p-doomed"); err != nil || len(ks) != 0 {
			t.Errorf("APIKeys of the deleted project = %d, %v", len(ks), err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		if _, err := tx.DeleteProject("p-doomed"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("second DeleteProject: %v, want ErrNotFound", err)
		}
		return nil
	})
	check(t, db)
}

// fillProject writes one row of every kind that belongs to project
// "p-"+name, as projectRows lists them: its user "u-"+name with
// everything a user has, a second user, a link whose user is gone, and
// the rows named by the project, its external methods and its webhook.
func fillProject(tx store.Tx, name string) error {
	later := t0.Add(time.Hour)
	pid, uid, mid, wid := "p-"+name, "u-"+name, "m-"+name, "w-"+name
	for _, err := range []error{
		tx.PutProject(&store.Project{ID: pid, Name: name, CreatedAt: t0}),
		tx.PutUser(&store.User{ID: uid, ProjectID: pid, Email: name + "@example.com", ExternalUserID: "ext-" + name, CreatedAt: t0}),
		tx.PutSession(&store.Session{ID: "s-" + name, UserID: uid, ProjectID: pid, IssuedAt: t0, ExpiresAt: later}),
		tx.PutUser(&store.User{ID: uid + "2", ProjectID: pid, Email: name + "2@example.com", CreatedAt: t0}),
		tx.PutSession(&store.Session{ID: "s-" + name + "2", UserID: uid + "2", ProjectID: pid, IssuedAt: t0, ExpiresAt: later}),
		tx.PutRefreshToken(&store.RefreshToken{SessionID: "s-" + name, Hash: []byte("rt-" + name), ProjectID: pid, CreatedAt: t0, ExpiresAt: later}),
		tx.PutRefreshToken(&store.RefreshToken{SessionID: "s-" + name + "2", Hash: []byte("rt-" + name), ProjectID: pid, CreatedAt: t0, ExpiresAt: later}),
		tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "totp", Status: "enrolled", CreatedAt: t0}),
		tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "sms", Status: "enrolled", Phone: "+15551234567", CreatedAt: t0}),
		tx.PutBackupCodes(&store.BackupCodes{UserID: uid, ProjectID: pid, Hashes: [][]byte{{1}}, Used: []bool{false}, CreatedAt: t0}),
		tx.PutPasskey(&store.Passkey{ID: "cred-" + name, UserID: uid, ProjectID: pid, Credential: []byte(`{}`), CreatedAt: t0}),
		tx.PutIdentity(&store.Identity{ProjectID: pid, Issuer: "https://idp.example", Subject: "sub-" + name, UserID: uid, Provider: "corp", CreatedAt: t0}),
		// A link whose user row is gone (left by an older release).
		tx.PutIdentity(&store.Identity{ProjectID: pid, Issuer: "https://idp.example", Subject: "orphan-" + name, UserID: "u-gone-" + name, CreatedAt: t0}),
		tx.PutChallenge(&store.Challenge{ID: "ch-" + name, ProjectID: pid, Kind: "register", UserID: uid, Session: []byte(`{}`), ExpiresAt: later}),
		tx.PutOAuthFlow(&store.OAuthFlow{ID: "of-" + name, ProjectID: pid, Kind: store.OAuthFlowState, Payload: []byte(`{}`), ExpiresAt: later}),
		tx.PutOIDCAuthRequest(&store.OIDCAuthRequest{ProjectID: pid, ID: "ar-" + name, ClientID: "c", UserID: uid, SessionID: "s-" + name, CreatedAt: t0, ExpiresAt: later}),
		tx.PutOIDCGrant(&store.OIDCGrant{ProjectID: pid, ID: "gr-" + name, ClientID: "c", UserID: uid, SessionID: "s-" + name, CreatedAt: t0, ExpiresAt: later}),
		tx.PutOIDCRefreshToken(&store.OIDCRefreshToken{ProjectID: pid, Hash: []byte("rt-" + name), GrantID: "gr-" + name, ClientID: "c", CreatedAt: t0, ExpiresAt: later}),
		tx.PutOIDCRevokedToken(&store.OIDCRevokedToken{ProjectID: pid, JTI: "gr-" + name + ".1.x", ClientID: "c", RevokedAt: t0, ExpiresAt: later}),
		tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: pid, Hash: []byte("dc-" + name), UserCode: "UC-" + name, ClientID: "c",
			State: store.DeviceAuthPending, CreatedAt: t0, ExpiresAt: later}),
		tx.PutCode(&store.Code{Kind: "otp", ProjectID: pid, Subject: "pending-" + name + "@example.com", Hash: []byte{1}, ExpiresAt: later}),
		tx.PutCode(&store.Code{Kind: "sms", ProjectID: pid, Subject: uid, Hash: []byte{1}, ExpiresAt: later}),
		tx.PutThrottle("otp", pid, "pending-"+name+"@example.com", &store.Throttle{Sends: []time.Time{t0}}),
		tx.PutThrottle("backup_fail", pid, uid, &store.Throttle{Sends: []time.Time{t0}}),
		tx.PutMagicLink(&store.MagicLink{Hash: []byte("link-" + name), ProjectID: pid, Email: "link@example.com", ExpiresAt: later}),
		tx.PutDevice(&store.Device{Key: []byte("dev-" + name), Hash: []byte{1}, UserID: uid, ProjectID: pid, CreatedAt: t0}),
		tx.PutExternalMethod(&store.ExternalMethod{ID: mid, ProjectID: pid, Method: "bank", Pattern: "webhook", Status: "active", CreatedAt: t0}),
		tx.PutExternalMethod(&store.ExternalMethod{ID: mid + "-2", ProjectID: pid, Method: "kiosk", Pattern: "webhook", Status: "active", CreatedAt: t0}),
		// Replay marks are scoped by the method id, not the project id.
		tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid, Subject: "sig", ExpiresAt: later}),
		tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid + "-2", Subject: "sig", ExpiresAt: later}),
		tx.PutThrottle("replay", mid, "sig", &store.Throttle{Sends: []time.Time{t0}}),
		tx.PutGrant(&store.Grant{Hash: []byte("grant-" + name), MethodID: mid, ProjectID: pid, ExternalUserID: "x", ExpiresAt: later}),
		tx.PutWebhook(&store.Webhook{ID: wid, ProjectID: pid, URL: "http://127.0.0.1/", CreatedAt: t0}),
		tx.EnqueueJob(&store.Job{WebhookID: wid, ProjectID: pid, EventID: "evt", NextAttemptAt: t0}),
		tx.AddDelivery(&store.Delivery{ID: "d-" + name, WebhookID: wid, EventID: "evt", Attempt: 1, Status: "failed", CreatedAt: t0}),
		tx.PutTemplate(&store.Template{ProjectID: pid, Kind: "otp", Locale: "en", Subject: "Code", Text: "{{.Code}}", UpdatedAt: t0}),
		tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_" + name, Hash: []byte{1}, ProjectID: pid, Mode: "test", CreatedAt: t0}),
		tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_" + name + "2", Hash: []byte{2}, ProjectID: pid, Mode: "test", CreatedAt: t0}),
		// History and messages already promised.
		tx.AddAuthEvent(&store.AuthEvent{ID: "ev-" + name, ProjectID: pid, UserID: uid, Success: true, CreatedAt: t0}),
		tx.AddSuppressed(store.SuppressedCount{Hour: t0, ProjectID: pid, Method: "email_otp", Action: "verify", FailureCode: "invalid_code", N: 2}),
		tx.AppendEvent(&store.Event{ID: "evt_" + name, ProjectID: pid, Type: "user.registered", CreatedAt: t0, Data: []byte(`{}`)}),
		tx.EnqueueMail(&store.Mail{ProjectID: pid, To: "pending-" + name + "@example.com", Kind: "otp", CreatedAt: t0}),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// projectRow is a row fillProject writes for a name, how to tell it is
// there, and whether DeleteProject and DeleteUser (of "u-"+name) leave
// it.
type projectRow struct {
	what          string
	keptByProject bool
	keptByUser    bool
	there         func(tx store.Tx, name string) (bool, error)
}

// found tells a lookup's answer: true when found, false for
// ErrNotFound.
func found[T any](_ T, err error) (bool, error) {
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// some tells a list's answer: true when it is not empty.
func some[T any](list []T, err error) (bool, error) { return len(list) > 0, err }

// page returns the list and the error of a page's three results.
func page[T, U any](list []T, _ U, err error) ([]T, error) { return list, err }

// projectRows are the rows fillProject writes.
var projectRows = []projectRow{
	{"project", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Project("p-" + n)) }},
	{"user", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.User("u-" + n)) }},
	{"user by email", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.UserByEmail("p-"+n, n+"@example.com")) }},
	{"user by external id", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.UserByExternalID("p-"+n, "ext-"+n)) }},
	{"second user", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.User("u-" + n + "2")) }},
	{"project's users", false, true, func(tx store.Tx, n string) (bool, error) { return some(page(tx.Users("p-"+n, "", "", 0))) }},
	{"session", false, false, func(tx store.Tx, n string) (bool, error) { return tx.SessionExists("s-" + n) }},
	{"user's sessions", false, false, func(tx store.Tx, n string) (bool, error) { return some(tx.UserSessions("u-" + n)) }},
	{"second user's session", false, true, func(tx store.Tx, n string) (bool, error) { return tx.SessionExists("s-" + n + "2") }},
	{"session's refresh token", false, false, func(tx store.Tx, n string) (bool, error) {
		return found(tx.RefreshToken("s-"+n, []byte("rt-"+n)))
	}},
	{"second user's refresh token", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.RefreshToken("s-"+n+"2", []byte("rt-"+n)))
	}},
	{"totp factor", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.Factor("u-"+n, "totp")) }},
	{"sms factor", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.Factor("u-"+n, "sms")) }},
	{"backup codes", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.BackupCodes("u-" + n)) }},
	{"passkey", false, false, func(tx store.Tx, n string) (bool, error) { return found(tx.Passkey("p-"+n, "cred-"+n)) }},
	{"user's passkeys", false, false, func(tx store.Tx, n string) (bool, error) { return some(tx.UserPasskeys("p-"+n, "u-"+n)) }},
	{"identity", false, false, func(tx store.Tx, n string) (bool, error) {
		return found(tx.Identity("p-"+n, "https://idp.example", "sub-"+n))
	}},
	{"user's identities", false, false, func(tx store.Tx, n string) (bool, error) { return some(tx.UserIdentities("u-" + n)) }},
	{"identity of a user gone", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.Identity("p-"+n, "https://idp.example", "orphan-"+n))
	}},
	{"identities of a user gone", false, true, func(tx store.Tx, n string) (bool, error) {
		return some(tx.UserIdentities("u-gone-" + n))
	}},
	{"challenge", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Challenge("ch-" + n)) }},
	{"sign-in with a provider in flight", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.OAuthFlow("of-" + n)) }},
	// An OpenID authorization request and grant of the user outlive it
	// until they expire (their session is gone: they answer nothing).
	{"OpenID authorization request", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.OIDCAuthRequest("p-"+n, "ar-"+n))
	}},
	{"OpenID grant", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.OIDCGrant("p-"+n, "gr-"+n)) }},
	{"OpenID refresh token", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.OIDCRefreshToken("p-"+n, []byte("rt-"+n)))
	}},
	{"revoked OpenID access token", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.OIDCRevokedToken("p-"+n, "gr-"+n+".1.x"))
	}},
	{"OpenID device authorization", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.OIDCDeviceAuth("p-"+n, []byte("dc-"+n)))
	}},
	{"OpenID device authorization's user code", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.OIDCDeviceAuthByUserCode("p-"+n, "UC-"+n))
	}},
	{"otp code", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.Code("otp", "p-"+n, "pending-"+n+"@example.com"))
	}},
	{"code naming the user", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Code("sms", "p-"+n, "u-"+n)) }},
	{"send history", false, true, func(tx store.Tx, n string) (bool, error) {
		th, err := tx.Throttle("otp", "p-"+n, "pending-"+n+"@example.com")
		return err == nil && len(th.Sends) > 0, err
	}},
	{"failure history naming the user", false, true, func(tx store.Tx, n string) (bool, error) {
		th, err := tx.Throttle("backup_fail", "p-"+n, "u-"+n)
		return err == nil && len(th.Sends) > 0, err
	}},
	{"magic link", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.MagicLink([]byte("link-" + n))) }},
	{"device", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Device([]byte("dev-" + n))) }},
	{"external method", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.ExternalMethod("m-" + n)) }},
	{"external method by name", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.ExternalMethodByName("p-"+n, "kiosk"))
	}},
	{"project's external methods", false, true, func(tx store.Tx, n string) (bool, error) { return some(tx.ExternalMethods("p-" + n)) }},
	{"replay mark", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Code("replay", "m-"+n, "sig")) }},
	{"second method's replay mark", false, true, func(tx store.Tx, n string) (bool, error) {
		return found(tx.Code("replay", "m-"+n+"-2", "sig"))
	}},
	{"method's history", false, true, func(tx store.Tx, n string) (bool, error) {
		th, err := tx.Throttle("replay", "m-"+n, "sig")
		return err == nil && len(th.Sends) > 0, err
	}},
	{"grant", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Grant([]byte("grant-" + n))) }},
	{"webhook", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Webhook("p-"+n, "w-"+n)) }},
	{"project's webhooks", false, true, func(tx store.Tx, n string) (bool, error) { return some(tx.Webhooks("p-" + n)) }},
	{"webhook's job", false, true, func(tx store.Tx, n string) (bool, error) {
		jobs, err := tx.DueJobs(t0.Add(time.Hour), 1000, "", 1000, func(string, int) int { return 1000 }, func(uint64) bool { return false })
		return slices.ContainsFunc(jobs, func(j *store.Job) bool { return j.WebhookID == "w-"+n }), err
	}},
	{"webhook's delivery", false, true, func(tx store.Tx, n string) (bool, error) { return some(tx.Deliveries("w-"+n, 10)) }},
	{"template", false, true, func(tx store.Tx, n string) (bool, error) { return found(tx.Template("p-"+n, "otp", "en")) }},
	{"project's templates", false, true, func(tx store.Tx, n string) (bool, error) { return some(tx.Templates("p-" + n)) }},
	{"key", true, true, func(tx store.Tx, n string) (bool, error) { return found(tx.APIKey("sk_test_" + n)) }},
	{"event", true, true, func(tx store.Tx, n string) (bool, error) {
		return some(page(tx.AuthEvents(store.AuthEventFilter{ProjectID: "p-" + n, Limit: 10})))
	}},
	{"events kept", true, true, func(tx store.Tx, n string) (bool, error) {
		k, err := tx.AuthEventCount("p-" + n)
		return k > 0, err
	}},
	{"hourly counters", true, true, func(tx store.Tx, n string) (bool, error) { return some(tx.HourlyCounts("p-"+n, t0, t0)) }},
	{"suppressed counters", true, true, func(tx store.Tx, n string) (bool, error) {
		return some(tx.SuppressedCounts("p-"+n, "", t0, t0, 10))
	}},
	{"outbox event", true, true, func(tx store.Tx, n string) (bool, error) {
		evs, err := tx.EventsAfter(0, 1000)
		return slices.ContainsFunc(evs, func(e *store.Event) bool { return e.ID == "evt_"+n }), err
	}},
	{"queued mail", true, true, func(tx store.Tx, n string) (bool, error) {
		var ok bool
		err := tx.RecentMail(func(m *store.Mail) bool { ok = m.To == "pending-"+n+"@example.com"; return !ok })
		return ok, err
	}},
}

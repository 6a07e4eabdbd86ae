package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/store"
	"latchkey/store/storetest"
)

// outageStore is a store that fails as a database out of reach does
// (store.ErrUnavailable, what PostgreSQL's engine answers while the
// database restarts) while down is set.
type outageStore struct {
	store.DB
	down *atomic.Bool
}

func (d outageStore) fail() error {
	return fmt.Errorf("%w: the database system is shutting down (injected)", store.ErrUnavailable)
}

func (d outageStore) View(ctx context.Context, fn func(store.Tx) error) error {
	if d.down.Load() {
		return d.fail()
	}
	return d.DB.View(ctx, fn)
}

func (d outageStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	if d.down.Load() {
		return d.fail()
	}
	return d.DB.Update(ctx, fn)
}

func (d outageStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if d.down.Load() {
		return d.fail()
	}
	return d.DB.Batch(ctx, fn)
}

func (d outageStore) SessionState(ctx context.Context, id string) (*store.SessionState, error) {
	if d.down.Load() {
		return nil, d.fail()
	}
	return d.DB.SessionState(ctx, id)
}

// newOutageServer is newTestServer whose service's store fails while
// the returned flag is set.
func newOutageServer(t *testing.T) (*testServer, *atomic.Bool) {
	t.Helper()
	down := &atomic.Bool{}
	ts := &testServer{t: t, Clock: newClock(), dsn: storetest.New(t),
		wrapDB: func(db store.DB) store.DB { return outageStore{DB: db, down: down} }}
	ts.start()
	b, err := ts.Svc.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts.Key, ts.Project = b.APIKey, b.Project
	return ts, down
}

// wantUnavailableJSON fails unless r is the providers' 503: JSON
// temporarily_unavailable with a description and Retry-After.
func wantUnavailableJSON(t *testing.T, what string, r *response) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable || r.Body["error"] != "temporarily_unavailable" ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s: %d %s, want 503 temporarily_unavailable", what, r.Status, r.Raw)
	}
	if d, _ := r.Body["error_description"].(string); d == "" {
		t.Fatalf("%s: no error_description: %s", what, r.Raw)
	}
	if got := r.Header.Get("Retry-After"); got != "10" {
		t.Fatalf("%s: Retry-After=%q, want 10", what, got)
	}
}

// wantUnavailablePage fails unless pg is a 503 page with Retry-After.
func wantUnavailablePage(t *testing.T, what string, pg *webPage) {
	t.Helper()
	if pg.Status != http.StatusServiceUnavailable || pg.Location != "" || !strings.HasPrefix(pg.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(pg.Body, auth.ErrUnavailable.Message) {
		t.Fatalf("%s: %d %q %s, want a 503 page", what, pg.Status, pg.Location, pg.Body)
	}
	if got := pg.Header.Get("Retry-After"); got != "10" {
		t.Fatalf("%s: Retry-After=%q, want 10", what, got)
	}
	if pg.Header.Get("Cache-Control") != "no-store" || pg.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("%s: page headers %v", what, pg.Header)
	}
}

// TestOIDCStoreOutage: while the store is out of reach, every step of a
// sign-in answers 503 with Retry-After (the pages and the authorization
// endpoint the error page, the token endpoint, user info and
// introspection RFC 6749's JSON temporarily_unavailable), never op's
// invalid_grant or an error redirect, nor, for a request with
// response_mode=form_post, a form posted to the client; once the store
// is back, the code and the refresh token acknowledged before the
// outage are redeemed and the sign-in forms left open go on (the
// form_post one to the form that posts its code).
func TestOIDCStoreOutage(t *testing.T) {
	t.Parallel()
	ts, down := newOutageServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"grantTypes": refreshGrants, "firstParty": true})
	tok, b := rp.signedIn("outage@example.com")
	verifier := oauth2.GenerateVerifier()
	code := rp.code(b, verifier) // acknowledged: the client holds it
	b2 := ts.newBrowser()
	form := rp.authorize(b2, oauth2.GenerateVerifier(), "st", "n2")
	// A request answered by a form posted to the client
	// (response_mode=form_post), its sign-in form left open.
	formPost := oauth2.SetAuthURLParam("response_mode", "form_post")
	b3 := ts.newBrowser()
	postForm := rp.authorize(b3, oauth2.GenerateVerifier(), "st-post", "n5", formPost)

	down.Store(true)
	wantUnavailableJSON(t, "code exchange", rp.exchange(code, verifier))
	wantUnavailableJSON(t, "refresh", rp.refresh(tok.RefreshToken))
	wantUnavailableJSON(t, "userinfo", rp.userinfo(tok.AccessToken))
	wantUnavailableJSON(t, "introspection", rp.introspect(tok.AccessToken))
	wantUnavailableJSON(t, "introspection of a refresh token", rp.introspect(tok.RefreshToken))
	wantUnavailablePage(t, "authorize", rp.authorize(ts.newBrowser(), oauth2.GenerateVerifier(), "st", "n3"))
	wantUnavailablePage(t, "authorize, signed in", rp.authorize(b, oauth2.GenerateVerifier(), "st", "n4"))
	wantUnavailablePage(t, "sign-in form", b2.submit(form, map[string]string{"email": "second@example.com"}))
	wantUnavailablePage(t, "authorize, form_post", rp.authorize(ts.newBrowser(), oauth2.GenerateVerifier(), "st", "n6", formPost))
	wantUnavailablePage(t, "authorize, signed in, form_post", rp.authorize(b, oauth2.GenerateVerifier(), "st", "n7", formPost))
	wantUnavailablePage(t, "sign-in form, form_post", b3.submit(postForm, map[string]string{"email": "third@example.com"}))

	down.Store(false)
	r := rp.exchange(code, verifier)
	if r.Status != http.StatusOK || str(t, r.Body, "access_token") == "" {
		t.Fatalf("the code after the outage: %d %s", r.Status, r.Raw)
	}
	r = rp.refresh(tok.RefreshToken)
	if r.Status != http.StatusOK || str(t, r.Body, "refresh_token") == "" {
		t.Fatalf("the refresh token after the outage: %d %s", r.Status, r.Raw)
	}
	rp.answer(b2.signIn(form, "second@example.com"))
	// The form_post request goes on: its answer is the form that posts
	// the code to the client.
	pg := b3.signIn(postForm, "third@example.com")
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `<form method="post" action="`+rpRedirect+`">`) ||
		!strings.Contains(pg.Body, `name="code" value="`) || !strings.Contains(pg.Body, `name="state" value="st-post"`) {
		t.Fatalf("the form_post request after the outage: %d %s", pg.Status, pg.Body)
	}
}

// TestOIDCStoreOutageProjectNotCached: an outage that finds the
// project's record out of the cache (just changed, or the cache frozen
// while a replica's invalidation feed is not trusted) fails before the
// provider is known: still the error page for the authorization
// endpoint and the sign-in pages, and RFC 6749's JSON for the token
// endpoint, each 503 with Retry-After, never the API's envelope.
func TestOIDCStoreOutageProjectNotCached(t *testing.T) {
	t.Parallel()
	ts, down := newOutageServer(t)
	pid := ts.Project.ID
	rp := ts.newRP(pid, map[string]any{"firstParty": true})
	b := ts.newBrowser()
	form := rp.authorize(b, oauth2.GenerateVerifier(), "st", "n")
	verifier := oauth2.GenerateVerifier()
	_, signedIn := rp.signedIn("warm@example.com")
	code := rp.code(signedIn, verifier)
	// A change to the project drops its cached record.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"displayName": "Changed"}))
	down.Store(true)
	wantUnavailablePage(t, "authorize", rp.authorize(ts.newBrowser(), oauth2.GenerateVerifier(), "st", "n"))
	wantUnavailablePage(t, "sign-in form", b.submit(form, map[string]string{"email": "cold@example.com"}))
	wantUnavailablePage(t, "device page", b.get(ts.issuer(pid)+"/device"))
	wantUnavailableJSON(t, "code exchange", rp.exchange(code, verifier))
	down.Store(false)
	if r := rp.exchange(code, verifier); r.Status != http.StatusOK {
		t.Fatalf("the code after the outage: %d %s", r.Status, r.Raw)
	}
}

// TestOIDCStoreOutageProjectUnread: a store outage that finds the
// project unread (its cached copy dropped, as a change or another
// replica's does) answers as the provider does in one, before anything
// of the request is read: the error page with Retry-After on a browser's
// path, RFC 6749's JSON temporarily_unavailable on the others, never
// latchkey's envelope.
func TestOIDCStoreOutageProjectUnread(t *testing.T) {
	t.Parallel()
	ts, down := newOutageServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"firstParty": true})
	_, b := rp.signedIn("unread@example.com")
	verifier := oauth2.GenerateVerifier()
	code := rp.code(b, verifier)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 100000}))
	down.Store(true)
	wantUnavailablePage(t, "authorize, signed in", rp.authorize(b, oauth2.GenerateVerifier(), "st", "n"))
	wantUnavailablePage(t, "authorize, form_post", rp.authorize(b, oauth2.GenerateVerifier(), "st", "n",
		oauth2.SetAuthURLParam("response_mode", "form_post")))
	wantUnavailableJSON(t, "code exchange", rp.exchange(code, verifier))
	down.Store(false)
	if r := rp.exchange(code, verifier); r.Status != http.StatusOK {
		t.Fatalf("the code after the outage: %d %s", r.Status, r.Raw)
	}
}

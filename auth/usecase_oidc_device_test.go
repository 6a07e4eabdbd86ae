package auth_test

import (
	"context"
	"errors"
	"latchkey/internal/testkit"
	"strconv"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
	"latchkey/store"
)

// The device flow's storage and the device page's use cases, called as
// op and the page call them, without HTTP (over HTTP: httpapi's
// TestOIDCDevice*).

// deviceClient registers a public client of the test project with the
// device grant; requireMFA as given.
func (ts *testService) deviceClient(name string, requireMFA bool) auth.ClientView {
	ts.t.Helper()
	typ, grants := auth.ClientPublic, []string{auth.GrantDeviceCode}
	c, _, err := ts.CreateClient(ctx, ts.project.ID, auth.ClientInput{Name: &name, Type: &typ, GrantTypes: &grants,
		RequireMFA: &requireMFA})
	if err != nil {
		ts.t.Fatal(err)
	}
	return c
}

// TestOIDCDeviceUserCodeForms: typed codes are read whatever their case,
// spaces and dashes; anything else is not a code.
func TestOIDCDeviceUserCodeForms(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "normalizes device user codes")
	for typed, want := range map[string]string{
		"BCDF-GHJK": "BCDF-GHJK", "bcdfghjk": "BCDF-GHJK", " bc df-gh jk ": "BCDF-GHJK", "BCDFGHJ-K": "BCDF-GHJK",
		"": "", "BCDF-GHJ": "", "BCDF-GHJKL": "", "ABCD-EFGH": "", "BCDF-GHJ1": "", "BCDF_GHJK": "", "ВCDF-GHJK": "",
	} {
		got, ok := auth.OIDCDeviceUserCode(typed)
		if ok != (want != "") || (ok && got != want) {
			t.Errorf("OIDCDeviceUserCode(%q)=%q %v, want %q", typed, got, ok, want)
		}
	}
}

// TestOIDCDeviceStorage: a stored authorization is pending, polled no
// sooner than every 5 s (slow_down: an error op reads as
// context.DeadlineExceeded), another client's poll is refused, a user
// code a live row holds is op.ErrDuplicateUserCode; a session of a
// client that requires a second factor may not answer it without one;
// allowing makes the device's session (session.created, method
// oidc:<client>), the next poll is approved with the user, and the code
// cannot be answered twice.
func TestOIDCDeviceStorage(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	st := ts.OIDCStorage(ts.project.ID)
	c, strict := ts.deviceClient("TV", false), ts.deviceClient("Strict", true)
	ok(t, st.StoreDeviceAuthorization(ctx, c.ID, "device-code-1", "BCDF-GHJK", time.Time{}, []string{"openid", "email", "unknown"}))
	ok(t, st.StoreDeviceAuthorization(ctx, strict.ID, "device-code-2", "LMNP-QRST", time.Time{}, []string{"openid"}))
	if err := st.StoreDeviceAuthorization(ctx, c.ID, "device-code-3", "BCDF-GHJK", time.Time{}, nil); !errors.Is(err, op.ErrDuplicateUserCode) {
		t.Fatalf("a user code taken: %v, want op.ErrDuplicateUserCode", err)
	}
	s, err := st.GetDeviceAuthorizatonState(ctx, c.ID, "device-code-1")
	if err != nil || s.Done || s.Denied || !s.Expires.After(time.Now()) || len(s.Scopes) != 2 {
		t.Fatalf("first poll: %+v %v, want pending with openid and email", s, err)
	}
	if _, err := st.GetDeviceAuthorizatonState(ctx, c.ID, "device-code-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a poll at once: %v, want slow_down", err)
	}
	if _, err := st.GetDeviceAuthorizatonState(ctx, strict.ID, "device-code-1"); err == nil {
		t.Fatal("another client's poll answered")
	}

	_, pr := ts.signIn("tv@example.com")
	d, err := ts.OIDCDeviceLookup(ctx, ts.project.ID, "lmnp qrst", "192.0.2.1")
	if err != nil || d.ClientName != "Strict" {
		t.Fatalf("lookup: %+v %v", d, err)
	}
	if ready, err := ts.OIDCDeviceSessionReady(ctx, ts.project.ID, d, pr); ready || err != nil {
		t.Fatalf("a one-factor session for a client that requires two: ready=%v %v", ready, err)
	}
	wantErr(t, ts.OIDCDeviceDecide(ctx, ts.project.ID, "LMNP-QRST", pr, true, ts.meta), auth.ErrInvalidSession, "")
	wantErr(t, ts.OIDCDeviceDecide(ctx, ts.project.ID, "BCDF-GHJK", nil, true, ts.meta), auth.ErrInvalidSession, "")
	wantErr(t, ts.OIDCDeviceDecide(ctx, ts.project.ID, "BCDF-GHJ", pr, true, ts.meta), auth.ErrUserCodeInvalid, auth.CatInvalidCode)

	before := len(ts.outbox("session.created"))
	ok(t, ts.OIDCDeviceDecide(ctx, ts.project.ID, "BCDF-GHJK", pr, true, ts.meta))
	created := ts.outbox("session.created")
	if len(created) != before+1 || created[before]["method"] != "oidc:TV" || created[before]["session_id"] == pr.SessionID {
		t.Fatalf("session.created %v, want the device's own session, method oidc:TV", created)
	}
	wantErr(t, ts.OIDCDeviceDecide(ctx, ts.project.ID, "BCDF-GHJK", pr, false, ts.meta), auth.ErrUserCodeInvalid, auth.CatInvalidCode)
	ts.clock.Advance(auth.OIDCDevicePollInterval)
	s, err = st.GetDeviceAuthorizatonState(ctx, c.ID, "device-code-1")
	if err != nil || !s.Done || s.Subject != pr.UserID || len(s.AMR) == 0 {
		t.Fatalf("poll after approval: %+v %v", s, err)
	}
}

// TestOIDCDeviceLookupThrottle: wrong codes are counted per address and
// per project over a rolling minute; a found code is not counted.
func TestOIDCDeviceLookupThrottle(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	st := ts.OIDCStorage(ts.project.ID)
	c := ts.deviceClient("TV", false)
	ok(t, st.StoreDeviceAuthorization(ctx, c.ID, "device-code-1", "BCDF-GHJK", time.Time{}, []string{"openid"}))
	for i := range auth.DeviceGuessesPerIP + 5 {
		if _, err := ts.OIDCDeviceLookup(ctx, ts.project.ID, "BCDF-GHJK", "192.0.2.9"); err != nil {
			t.Fatalf("found code %d: %v", i, err)
		}
	}
	for i := range auth.DeviceGuessesPerProject {
		ip := "198.51.100." + strconv.Itoa(i%200)
		if i >= 200 {
			ip = "2001:db8:" + strconv.Itoa(i) + "::1"
		}
		_, err := ts.OIDCDeviceLookup(ctx, ts.project.ID, "BBBB-BBBB", ip)
		wantErr(t, err, auth.ErrUserCodeInvalid, auth.CatInvalidCode)
	}
	_, err := ts.OIDCDeviceLookup(ctx, ts.project.ID, "BCDF-GHJK", "203.0.113.1")
	if e := wantErr(t, err, auth.ErrUserCodeThrottled, auth.CatRateLimited); e.RetryAfter <= 0 {
		t.Fatalf("throttled without a wait: %+v", e)
	}
	// Another project is not throttled.
	other, err := ts.CreateProject(ctx, auth.ProjectInput{Name: ptr("Other")})
	ok(t, err)
	if _, err := ts.OIDCDeviceLookup(ctx, other.ID, "BBBB-BBBB", "203.0.113.1"); !errors.Is(err, auth.ErrUserCodeInvalid) {
		t.Fatalf("another project: %v, want ErrUserCodeInvalid", err)
	}
	ts.clock.Advance(time.Minute)
	if _, err := ts.OIDCDeviceLookup(ctx, ts.project.ID, "BCDF-GHJK", "203.0.113.1"); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
	var d *store.OIDCDeviceAuth
	ok(t, ts.db.View(ctx, func(tx store.Tx) (err error) {
		d, err = tx.OIDCDeviceAuthByUserCode(ts.project.ID, "BCDF-GHJK")
		return err
	}))
	if d.State != store.DeviceAuthPending {
		t.Fatalf("looked-up code %+v, want pending", d)
	}
}

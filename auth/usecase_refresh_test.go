package auth_test

import (
	"encoding/base64"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// refreshTokens returns how many refresh tokens the store holds, used
// or not.
func (ts *testService) refreshTokens() int {
	ts.t.Helper()
	var n int
	if err := ts.db.View(ctx, func(tx store.Tx) (err error) {
		n, err = tx.ExpiringCount(store.ExpiringRefreshTokens)
		return err
	}); err != nil {
		ts.t.Fatal(err)
	}
	return n
}

// storedSession returns the session row with id.
func (ts *testService) storedSession(id string) *store.Session {
	ts.t.Helper()
	var s *store.Session
	if err := ts.db.View(ctx, func(tx store.Tx) (err error) { s, err = tx.Session(id); return err }); err != nil {
		ts.t.Fatal(err)
	}
	return s
}

// refresh refreshes the session of refreshToken in ts's project.
func (ts *testService) refresh(refreshToken string) (*auth.Refreshed, error) {
	return ts.RefreshSession(ctx, ts.project, refreshToken, ts.meta)
}

// setSessionTimes sets the project's token lifetime, idle and maximum
// session times (seconds).
func (ts *testService) setSessionTimes(ttl, idle, most int) {
	ts.t.Helper()
	p, err := ts.UpdateProject(ctx, ts.project.ID, auth.ProjectInput{SessionTTLSeconds: &ttl, SessionIdleSeconds: &idle, SessionMaxSeconds: &most})
	ok(ts.t, err)
	ts.project = p
}

// TestRefreshKeepsTheSession: a sign-in gives a refresh token (64
// base64url characters naming the session; only its keyed hash is
// stored); a refresh an hour later gives a new token of the same
// session, with its proofs, expiring the token lifetime later, and a new
// refresh token; the session's row slides to the idle time from now,
// last seen now. Each refresh token is used once: the chain goes on with
// the newest.
func TestRefreshKeepsTheSession(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, pr := ts.signIn("slide@example.com")
	raw, err := base64.RawURLEncoding.DecodeString(l.RefreshToken)
	if len(l.RefreshToken) != 64 || err != nil || len(raw) != 48 {
		t.Fatalf("refresh token %q (%v), want 48 bytes in base64url", l.RefreshToken, err)
	}
	h := ts.keys.HashString("refresh", l.RefreshToken)
	ok(t, ts.db.View(ctx, func(tx store.Tx) error {
		rt, err := tx.RefreshToken(l.Session.ID, h[:])
		if err != nil {
			return err
		}
		if rt.UsedAt != nil || rt.ProjectID != ts.project.ID || !rt.ExpiresAt.Equal(l.Session.ExpiresAt) || slices.Equal(rt.Hash, []byte(l.RefreshToken)) {
			t.Errorf("stored token %+v, want the live one, due with its session, only hashed", rt)
		}
		return nil
	}))
	amr := l.AMR()

	ts.clock.Advance(time.Hour)
	tokens := []string{l.Token}
	current := l.RefreshToken
	for i := range 3 {
		now := ts.clock.Now().UTC().Truncate(time.Second)
		rf, err := ts.refresh(current)
		ok(t, err)
		if rf.RefreshToken == current || rf.Token == tokens[len(tokens)-1] || len(rf.RefreshToken) != 64 {
			t.Fatalf("refresh %d: token or refresh token not new", i)
		}
		npr, sp, err := ts.AuthenticateSessionProofs(ctx, "Bearer "+rf.Token)
		ok(t, err)
		if npr.SessionID != pr.SessionID || npr.UserID != pr.UserID || !slices.Equal(sp.AMR, amr) {
			t.Fatalf("refresh %d: session %s of %s, amr %v; want %s of %s, %v", i, npr.SessionID, npr.UserID, sp.AMR, pr.SessionID, pr.UserID, amr)
		}
		if npr.IssuedAt != now.Unix() || npr.ExpiresAt != now.Add(24*time.Hour).Unix() || !rf.ExpiresAt.Equal(now.Add(24*time.Hour)) {
			t.Fatalf("refresh %d: token iat %d exp %d (%v), want %v and a day later", i, npr.IssuedAt, npr.ExpiresAt, rf.ExpiresAt, now)
		}
		row := ts.storedSession(pr.SessionID)
		if !row.ExpiresAt.Equal(now.Add(7*24*time.Hour)) || !row.LastSeenAt.Equal(now) || !row.IssuedAt.Equal(l.Session.IssuedAt) {
			t.Fatalf("refresh %d: row issued %v expires %v last seen %v; want the sign-in, 7 days from %v, %v", i, row.IssuedAt, row.ExpiresAt, row.LastSeenAt, now, now)
		}
		if !slices.EqualFunc(row.Proofs, l.Session.Proofs, func(a, b store.Proof) bool { return a.Method == b.Method && a.At.Equal(b.At) }) {
			t.Fatalf("refresh %d: proofs %v, want the sign-in's %v", i, row.Proofs, l.Session.Proofs)
		}
		// The token before, still in its lifetime, works too: a
		// refresh does not end the tokens it follows.
		if _, err := ts.AuthenticateSession(ctx, "Bearer "+tokens[len(tokens)-1]); err != nil {
			t.Fatalf("refresh %d: the token before: %v", i, err)
		}
		tokens = append(tokens, rf.Token)
		current = rf.RefreshToken
		ts.clock.Advance(20 * time.Hour)
	}
	if n := ts.refreshTokens(); n != 4 {
		t.Fatalf("%d refresh tokens stored, want 4: three used, one live", n)
	}
	list, err := ts.Sessions(ctx, pr)
	ok(t, err)
	if len(list) != 1 || list[0].ID != pr.SessionID {
		t.Fatalf("sessions %+v, want the one", list)
	}
	if evs := ts.events(); evs[len(evs)-1].Action != "verify" {
		t.Fatalf("newest event %+v: a refresh that succeeds is no event", evs[len(evs)-1])
	}
}

// TestRefreshReuseEndsTheSession: a refresh token presented a second
// time ends its session at once (every token of it refused, the newest
// refresh token too), emits session.revoked and records an
// authentication event already_used naming the user; another session of
// the user stays.
func TestRefreshReuseEndsTheSession(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "reuse@example.com"
	l, pr := ts.signIn(addr)
	other, _ := ts.signIn(addr)
	rf1, err := ts.refresh(l.RefreshToken)
	ok(t, err)
	rf2, err := ts.refresh(rf1.RefreshToken)
	ok(t, err)

	_, err = ts.refresh(l.RefreshToken)
	wantErr(t, err, auth.ErrInvalidSession, auth.CatAlreadyUsed)
	for i, tok := range []string{l.Token, rf1.Token, rf2.Token} {
		if _, err := ts.AuthenticateSession(ctx, "Bearer "+tok); err == nil {
			t.Fatalf("token %d of the ended session still works", i)
		}
	}
	_, err = ts.refresh(rf2.RefreshToken)
	wantErr(t, err, auth.ErrInvalidSession, auth.CatInvalidCode)
	if got := ts.outbox("session.revoked"); len(got) != 1 || got[0]["session_id"] != pr.SessionID || got[0]["user_id"] != pr.UserID {
		t.Fatalf("session.revoked events %v, want the one of the session", got)
	}
	e := ts.lastEvent()
	if e.Method != "session" || e.Action != "refresh" || e.Success || e.FailureCode == nil || *e.FailureCode != auth.CatInvalidCode {
		t.Fatalf("last event %+v, want the refused refresh of the newest token", e)
	}
	reused := false
	for _, e := range ts.events() {
		if e.Method == "session" && e.FailureCode != nil && *e.FailureCode == auth.CatAlreadyUsed {
			reused = e.UserID != nil && *e.UserID == pr.UserID && e.Email != nil && *e.Email == addr
		}
	}
	if !reused {
		t.Fatalf("no already_used event of %s among %+v", addr, ts.events())
	}
	if _, err := ts.AuthenticateSession(ctx, "Bearer "+other.Token); err != nil {
		t.Fatalf("the user's other session: %v", err)
	}
	if _, err := ts.refresh(other.RefreshToken); err != nil {
		t.Fatalf("the other session's refresh: %v", err)
	}
	if n := ts.refreshTokens(); n != 2 {
		t.Fatalf("%d refresh tokens stored, want the other session's 2", n)
	}
}

// TestRefreshConcurrentUse: one refresh token presented by several
// callers at once is exchanged once; the next is reuse, so the session
// ends, and those after find it ended (all 401 INVALID_SESSION).
func TestRefreshConcurrentUse(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, _ := ts.signIn("race@example.com")
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = ts.refresh(l.RefreshToken)
		}()
	}
	wg.Wait()
	succeeded, reused, ended := 0, 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			succeeded++
		case !errors.Is(err, auth.ErrInvalidSession):
			t.Fatalf("refresh: %v", err)
		case auth.AsError(err).Category == auth.CatAlreadyUsed:
			reused++
		case auth.AsError(err).Category == auth.CatInvalidCode:
			ended++
		}
	}
	if succeeded != 1 || reused != 1 || ended != n-2 {
		t.Fatalf("%d refreshes succeeded, %d were reuse, %d found the session ended (%v); want 1, 1, %d", succeeded, reused, ended, errs, n-2)
	}
	if _, err := ts.AuthenticateSession(ctx, "Bearer "+l.Token); err == nil {
		t.Fatal("the session survived its refresh token's reuse")
	}
}

// TestRefreshIdleAndMax: with a 5-minute token, a 10-minute idle time
// and a 25-minute maximum, a session refreshed within 10 minutes of its
// sign-in or last refresh slides; one left 10 minutes cannot be
// refreshed, nor any past 25 minutes from its sign-in however recently
// refreshed (401 INVALID_SESSION, expired). Near the maximum, the row
// and the token end with it.
func TestRefreshIdleAndMax(t *testing.T) {
	t.Parallel()
	const ttl, idle, most = 300, 600, 1500
	cases := []struct {
		name  string
		waits []time.Duration // before each refresh; the last is refused
	}{
		{"idle", []time.Duration{idle * time.Second}},
		{"idle after a refresh", []time.Duration{9 * time.Minute, idle * time.Second}},
		{"maximum", []time.Duration{9 * time.Minute, 9 * time.Minute, 7 * time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestService(t)
			ts.setSessionTimes(ttl, idle, most)
			l, _ := ts.signIn("timed@example.com")
			if got := l.Session.ExpiresAt.Sub(l.Session.IssuedAt); got != idle*time.Second {
				t.Fatalf("row lives %v, want the idle time", got)
			}
			signIn := l.Session.IssuedAt
			ts.clock.Set(signIn)
			current := l.RefreshToken
			for i, wait := range c.waits {
				ts.clock.Advance(wait)
				rf, err := ts.refresh(current)
				if i == len(c.waits)-1 {
					wantErr(t, err, auth.ErrInvalidSession, auth.CatExpired)
					e := ts.lastEvent()
					if e.Method != "session" || e.Action != "refresh" || *e.FailureCode != auth.CatExpired {
						t.Fatalf("last event %+v, want the expired refresh", e)
					}
					return
				}
				ok(t, err)
				// A second before the idle time, or the maximum, the
				// session still slides; its end and the token's never
				// pass the maximum.
				now := ts.clock.Now()
				end := min(now.Add(idle*time.Second).Unix(), signIn.Add(most*time.Second).Unix())
				if row := ts.storedSession(l.Session.ID); row.ExpiresAt.Unix() != end || rf.ExpiresAt.Unix() != min(now.Unix()+ttl, end) {
					t.Fatalf("refresh %d: row ends %v, token %v; want %v and %v", i, row.ExpiresAt.Unix(), rf.ExpiresAt.Unix(), end, min(now.Unix()+ttl, end))
				}
				current = rf.RefreshToken
			}
		})
	}
	// One second short of each limit, the refresh works.
	ts := newTestService(t)
	ts.setSessionTimes(ttl, idle, most)
	l, _ := ts.signIn("edge@example.com")
	ts.clock.Set(l.Session.IssuedAt.Add(idle*time.Second - time.Second))
	rf, err := ts.refresh(l.RefreshToken)
	ok(t, err)
	ts.clock.Set(l.Session.IssuedAt.Add(most*time.Second - time.Second))
	_, err = ts.refresh(rf.RefreshToken)
	wantErr(t, err, auth.ErrInvalidSession, auth.CatExpired) // idle: 15 minutes since the refresh
	l, _ = ts.signIn("edge2@example.com")
	current := l.RefreshToken
	for at := 9 * time.Minute; at < most*time.Second; at += 9 * time.Minute {
		ts.clock.Set(l.Session.IssuedAt.Add(at))
		rf, err := ts.refresh(current)
		ok(t, err)
		current = rf.RefreshToken
	}
	ts.clock.Set(l.Session.IssuedAt.Add(most*time.Second - time.Second))
	rf, err = ts.refresh(current)
	ok(t, err)
	if want := l.Session.IssuedAt.Add(most * time.Second); !rf.ExpiresAt.Equal(want) {
		t.Fatalf("token of the last refresh expires %v, want the maximum %v", rf.ExpiresAt, want)
	}
}

// TestRefreshRefused: refresh tokens that are not ones, or unknown, or
// another project's, are 401 INVALID_SESSION (invalid_code) and change
// nothing (the real owner's refresh still works); an empty one is 400.
func TestRefreshRefused(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, _ := ts.signIn("owner@example.com")
	other, err := ts.CreateProject(ctx, auth.ProjectInput{Name: ptr("Other")})
	ok(t, err)
	_, err = ts.refresh("")
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)
	flipped := []byte(l.RefreshToken)
	flipped[40] ^= 1
	for name, tok := range map[string]string{
		"not base64url":   l.RefreshToken[:63] + "!",
		"too short":       l.RefreshToken[:60],
		"too long":        l.RefreshToken + "AAAA",
		"another secret":  string(flipped),
		"unknown session": base64.RawURLEncoding.EncodeToString(make([]byte, 48)),
		"a session token": l.Token,
	} {
		_, err := ts.refresh(tok)
		if e := wantErr(t, err, auth.ErrInvalidSession, auth.CatInvalidCode); e.Message != auth.ErrInvalidSession.Message {
			t.Errorf("%s: message %q", name, e.Message)
		}
	}
	_, err = ts.RefreshSession(ctx, other, l.RefreshToken, ts.meta)
	wantErr(t, err, auth.ErrInvalidSession, auth.CatInvalidCode)
	if n := ts.refreshTokens(); n != 1 {
		t.Fatalf("%d refresh tokens after the refusals, want the live one", n)
	}
	if _, err := ts.refresh(l.RefreshToken); err != nil {
		t.Fatalf("the owner's refresh after the refusals: %v", err)
	}
}

// TestRefreshEndsWithTheSession: every way a session ends takes its
// refresh tokens along, used and live: its refresh is then 401
// INVALID_SESSION and the store keeps none of them.
func TestRefreshEndsWithTheSession(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		end  func(ts *testService, l *auth.Login, pr *auth.Principal) error
	}{
		{"logout", func(ts *testService, _ *auth.Login, pr *auth.Principal) error {
			return ts.Logout(ctx, pr, auth.LogoutThis)
		}},
		{"logout of all", func(ts *testService, _ *auth.Login, pr *auth.Principal) error {
			return ts.Logout(ctx, pr, auth.LogoutAll)
		}},
		{"logout of the others", func(ts *testService, _ *auth.Login, _ *auth.Principal) error {
			_, pr := ts.signIn("ended@example.com")
			return ts.Logout(ctx, pr, auth.LogoutOthers)
		}},
		{"revoked by its user", func(ts *testService, l *auth.Login, pr *auth.Principal) error {
			return ts.RevokeSession(ctx, pr, l.Session.ID)
		}},
		{"revoked by the operator", func(ts *testService, l *auth.Login, _ *auth.Principal) error {
			_, err := ts.AdminRevokeSessions(ctx, l.User.ID)
			return err
		}},
		{"user disabled", func(ts *testService, l *auth.Login, _ *auth.Principal) error {
			return ts.SetUserDisabled(ctx, l.User.ID, true)
		}},
		{"user deleted", func(ts *testService, _ *auth.Login, pr *auth.Principal) error { return ts.DeleteUser(ctx, pr) }},
		{"user deleted by the operator", func(ts *testService, l *auth.Login, _ *auth.Principal) error {
			return ts.AdminDeleteUser(ctx, l.User.ID)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestService(t)
			l, pr := ts.signIn("ended@example.com")
			rf, err := ts.refresh(l.RefreshToken) // a used token and a live one
			ok(t, err)
			ok(t, c.end(ts, l, pr))
			_, err = ts.refresh(rf.RefreshToken)
			wantErr(t, err, auth.ErrInvalidSession, auth.CatInvalidCode)
			_, err = ts.refresh(l.RefreshToken)
			wantErr(t, err, auth.ErrInvalidSession, auth.CatInvalidCode)
			if c.name == "logout of the others" {
				if n := ts.refreshTokens(); n != 1 {
					t.Fatalf("%d refresh tokens, want the calling session's one", n)
				}
				return
			}
			if n := ts.refreshTokens(); n != 0 {
				t.Fatalf("%d refresh tokens left", n)
			}
		})
	}
}

// TestProjectSessionTimes: a project shows its idle and maximum session
// times, the defaults until set (raised to the token lifetime, then to
// the idle time, when those are longer); each is 300 to 31,536,000
// seconds, and the token lifetime <= the idle time <= the maximum, else
// 400 VALIDATION_ERROR, changing nothing.
func TestProjectSessionTimes(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	view := func() (int, int, int) {
		t.Helper()
		p, err := ts.Project(ctx, ts.project.ID)
		ok(t, err)
		v := ts.ViewProject(p)
		return v.SessionTTLSeconds, v.SessionIdleSeconds, v.SessionMaxSeconds
	}
	want := func(ttl, idle, most int) {
		t.Helper()
		if a, b, c := view(); a != ttl || b != idle || c != most {
			t.Fatalf("session times %d/%d/%d, want %d/%d/%d", a, b, c, ttl, idle, most)
		}
	}
	want(86400, 604800, 2592000)
	update := func(in auth.ProjectInput) error {
		_, err := ts.UpdateProject(ctx, ts.project.ID, in)
		return err
	}
	ok(t, update(auth.ProjectInput{SessionTTLSeconds: ptr(30 * 86400)}))
	want(30*86400, 30*86400, 30*86400) // the defaults follow the token lifetime
	ok(t, update(auth.ProjectInput{SessionTTLSeconds: ptr(86400), SessionIdleSeconds: ptr(3 * 86400)}))
	want(86400, 3*86400, 2592000)
	for name, in := range map[string]auth.ProjectInput{
		"idle too short":             {SessionIdleSeconds: ptr(299)},
		"idle too long":              {SessionIdleSeconds: ptr(31536001)},
		"maximum too short":          {SessionMaxSeconds: ptr(299)},
		"maximum too long":           {SessionMaxSeconds: ptr(31536001)},
		"idle under the token":       {SessionIdleSeconds: ptr(3600)},
		"token over the idle time":   {SessionTTLSeconds: ptr(4 * 86400)},
		"maximum under the idle":     {SessionMaxSeconds: ptr(2 * 86400)},
		"idle over a maximum set":    {SessionIdleSeconds: ptr(40 * 86400), SessionMaxSeconds: ptr(35 * 86400)},
		"all three out of order":     {SessionTTLSeconds: ptr(3600), SessionIdleSeconds: ptr(7200), SessionMaxSeconds: ptr(3600)},
		"idle under a token it sets": {SessionTTLSeconds: ptr(7200), SessionIdleSeconds: ptr(3600)},
	} {
		if err := update(in); err == nil {
			t.Fatalf("%s: accepted", name)
		} else {
			wantErr(t, err, auth.ErrValidation, auth.CatValidation)
		}
	}
	want(86400, 3*86400, 2592000)
	ok(t, update(auth.ProjectInput{Name: ptr("Renamed")})) // the others stay
	ok(t, update(auth.ProjectInput{SessionTTLSeconds: ptr(300), SessionIdleSeconds: ptr(300), SessionMaxSeconds: ptr(300)}))
	want(300, 300, 300)
	p, err := ts.CreateProject(ctx, auth.ProjectInput{Name: ptr("Long"), SessionTTLSeconds: ptr(60 * 86400)})
	ok(t, err)
	if v := ts.ViewProject(p); v.SessionIdleSeconds != 60*86400 || v.SessionMaxSeconds != 60*86400 {
		t.Fatalf("a new project with a 60-day token: %d/%d, want both 60 days", v.SessionIdleSeconds, v.SessionMaxSeconds)
	}
	_, err = ts.CreateProject(ctx, auth.ProjectInput{Name: ptr("Bad"), SessionIdleSeconds: ptr(600)})
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)
}

// TestRefreshPendingSecondFactor: a session signed in by email on an
// account with TOTP, which has not proven TOTP, is refused a refresh with
// STEP_UP_REQUIRED (its refresh token stays unused), and refreshes once
// it verifies TOTP; the enrolling session, which proved it, refreshes.
func TestRefreshPendingSecondFactor(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "pending@example.com"
	first, pr := ts.signIn(addr)
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	ts.clock.Advance(time.Minute)
	second, pr2 := ts.signIn(addr)
	if !second.SecondFactorPending() {
		t.Fatal("an email sign-in on a TOTP account is not pending")
	}
	_, err = ts.refresh(second.RefreshToken)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	if e := ts.lastEvent(); e.Method != "session" || e.Action != "refresh" || *e.FailureCode != auth.CatRiskBlocked {
		t.Fatalf("last event %+v, want the refused refresh", e)
	}
	ts.clock.Advance(30 * time.Second)
	ok(t, ts.VerifyTOTP(ctx, pr2, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	rf, err := ts.refresh(second.RefreshToken) // not used by the refusal
	ok(t, err)
	if rf.Session.ID != second.Session.ID {
		t.Fatalf("refreshed session %s, want %s", rf.Session.ID, second.Session.ID)
	}
	_, err = ts.refresh(first.RefreshToken)
	ok(t, err)
}

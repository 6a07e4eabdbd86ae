package auth_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// TestSessionsListAndRevoke: a user's live sessions are listed newest
// first with how they signed in; the user may end one of their own
// (session.revoked) and no one else's (404 SESSION_NOT_FOUND); an ended
// session's token is refused at once.
func TestSessionsListAndRevoke(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "many@example.com"
	var logins []*auth.Login
	var prs []*auth.Principal
	for range 3 {
		l, pr := ts.signIn(addr)
		logins, prs = append(logins, l), append(prs, pr)
		ts.clock.Advance(time.Second)
	}
	list, err := ts.Sessions(ctx, prs[0])
	ok(t, err)
	if len(list) != 3 || list[0].ID != logins[2].Session.ID || list[2].ID != logins[0].Session.ID {
		t.Fatalf("sessions %+v, want the three newest first", list)
	}
	for _, v := range list {
		if v.Method != "email_otp" || v.IP == nil || *v.IP != ts.meta.IP || v.UserAgent == nil || *v.UserAgent != ts.meta.UserAgent {
			t.Fatalf("session %+v, want its method, IP and user agent", v)
		}
	}

	_, stranger := ts.signIn("stranger@example.com")
	wantErr(t, ts.RevokeSession(ctx, stranger, logins[1].Session.ID), auth.ErrSessionNotFound, "")
	wantErr(t, ts.RevokeSession(ctx, prs[0], "no-such-session"), auth.ErrSessionNotFound, "")
	ok(t, ts.RevokeSession(ctx, prs[0], logins[1].Session.ID))
	if _, err := ts.AuthenticateSession(ctx, "Bearer "+logins[1].Token); !errors.Is(err, auth.ErrInvalidSession) {
		t.Fatalf("revoked session's token: %v", err)
	}
	if got := ts.outbox("session.revoked"); len(got) != 1 || got[0]["session_id"] != logins[1].Session.ID {
		t.Fatalf("session.revoked events %v", got)
	}
	list, err = ts.Sessions(ctx, prs[0])
	ok(t, err)
	if len(list) != 2 {
		t.Fatalf("%d sessions after revoking one, want 2", len(list))
	}
}

// TestLogoutScopes: logout ends the calling session, the others, or all
// of the user's, each with a session.revoked; another scope is 400 and
// a gone session 401.
func TestLogoutScopes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scope     string
		survivors []bool // per session, whether its token still works
	}{
		{auth.LogoutThis, []bool{false, true, true}},
		{auth.LogoutOthers, []bool{true, false, false}},
		{auth.LogoutAll, []bool{false, false, false}},
	}
	for _, tc := range cases {
		t.Run("scope "+tc.scope, func(t *testing.T) {
			ts := newTestService(t)
			var logins []*auth.Login
			var caller *auth.Principal
			for i := range 3 {
				l, pr := ts.signIn("out@example.com")
				logins = append(logins, l)
				if i == 0 {
					caller = pr
				}
			}
			_, bystander := ts.signIn("by@example.com")
			ok(t, ts.Logout(ctx, caller, tc.scope))
			ended := 0
			for i, l := range logins {
				_, err := ts.AuthenticateSession(ctx, "Bearer "+l.Token)
				if alive := err == nil; alive != tc.survivors[i] {
					t.Fatalf("session %d alive=%v, want %v", i, alive, tc.survivors[i])
				}
				if !tc.survivors[i] {
					ended++
				}
			}
			if got := ts.outbox("session.revoked"); len(got) != ended {
				t.Fatalf("%d session.revoked events, want %d", len(got), ended)
			}
			if _, err := ts.Sessions(ctx, bystander); err != nil {
				t.Fatalf("another user's session ended: %v", err)
			}
		})
	}
	ts := newTestService(t)
	_, pr := ts.signIn("bad@example.com")
	wantErr(t, ts.Logout(ctx, pr, "everything"), auth.ErrValidation, auth.CatValidation)
	ok(t, ts.Logout(ctx, pr, auth.LogoutThis))
	wantErr(t, ts.Logout(ctx, pr, auth.LogoutThis), auth.ErrInvalidSession, "")
	_, err := ts.Sessions(ctx, pr)
	wantErr(t, err, auth.ErrInvalidSession, "")
}

// TestAdminSessionsAndDisable: the operator lists and ends a user's
// sessions; disabling a user ends them too and refuses every login path
// with 403 USER_DISABLED until enabled again; deleting a user ends its
// sessions and emits user.deleted.
func TestAdminSessionsAndDisable(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "admin@example.com"
	l1, _ := ts.signIn(addr)
	l2, _ := ts.signIn(addr)
	id := l1.User.ID
	list, err := ts.AdminSessions(ctx, id)
	ok(t, err)
	if len(list) != 2 {
		t.Fatalf("%d sessions, want 2", len(list))
	}
	n, err := ts.AdminRevokeSessions(ctx, id)
	ok(t, err)
	if n != 2 {
		t.Fatalf("revoked %d, want 2", n)
	}
	for _, l := range []*auth.Login{l1, l2} {
		if _, err := ts.AuthenticateSession(ctx, "Bearer "+l.Token); err == nil {
			t.Fatal("a session survived the admin revoke")
		}
	}
	_, err = ts.AdminSessions(ctx, "nobody")
	wantErr(t, err, auth.ErrUserNotFound, "")

	l3, _ := ts.signIn(addr)
	ok(t, ts.SetUserDisabled(ctx, id, true))
	if _, err := ts.AuthenticateSession(ctx, "Bearer "+l3.Token); err == nil {
		t.Fatal("a disabled user's session still works")
	}
	ok(t, ts.SendMagicLink(ctx, ts.project, "fresh@example.com", "", ts.meta)) // others are unaffected
	wantErr(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta), auth.ErrUserDisabled, auth.CatUserDisabled)
	ok(t, ts.SetUserDisabled(ctx, id, false))
	ts.clock.Advance(auth.SendInterval)
	_, pr := ts.signIn(addr)

	ok(t, ts.DeleteUser(ctx, pr))
	if got := ts.outbox("user.deleted"); len(got) != 1 || got[0]["user_id"] != id {
		t.Fatalf("user.deleted events %v", got)
	}
	if u := ts.user(addr); u != nil {
		t.Fatalf("deleted user still there: %+v", u)
	}
	_, err = ts.SessionUser(ctx, pr)
	wantErr(t, err, auth.ErrInvalidSession, "")
}

// TestSessionExpires: a session token is refused once the project's
// token lifetime (sessionTtlSeconds) has passed, though its session's
// row lives on, the project's idle time (7 days by default), for a
// refresh.
func TestSessionExpires(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	p, err := ts.UpdateProject(ctx, ts.project.ID, auth.ProjectInput{SessionTTLSeconds: ptr(300)})
	ok(t, err)
	ts.project = p
	l, pr := ts.signIn("short@example.com")
	if ttl := pr.ExpiresAt - pr.IssuedAt; ttl != 300 || pr.IssuedAt != l.Session.IssuedAt.Unix() {
		t.Fatalf("token lifetime %d s (iat %d), want the project's 300 from the sign-in (%v)", ttl, pr.IssuedAt, l.Session.IssuedAt)
	}
	if row := l.Session.ExpiresAt.Sub(l.Session.IssuedAt); row != 7*24*time.Hour {
		t.Fatalf("session row lifetime %v, want the default idle time, 7 days", row)
	}
	ts.clock.Advance(time.Unix(pr.ExpiresAt, 0).Sub(ts.clock.Now()) - time.Second)
	ts.principal(l)
	ts.clock.Advance(time.Second)
	_, err = ts.AuthenticateSession(ctx, "Bearer "+l.Token)
	wantErr(t, err, auth.ErrInvalidSession, "")
}

// TestLastSeenFlush: a flush writes a session's last request only when
// it came lastSeenLag (a minute) or more after the sign-in; a session
// used only within its first minute keeps no lastSeenAt (the flush skips
// it without reading it, and the stored result is what the store's own
// check would give). Sessions start on a whole second (the token's iat),
// and requests are noted by the second, so 0.3 s into a second a check
// 60 s after the sign-in counts as 60 s.
func TestLastSeenFlush(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	ts.clock.Advance(300 * time.Millisecond)
	for _, c := range []struct {
		after   time.Duration
		written bool
	}{
		{0, false},
		{59 * time.Second, false},
		{60 * time.Second, true},
		{61 * time.Second, true},
		{10 * time.Minute, true},
	} {
		addr := fmt.Sprintf("seen-%d@example.com", c.after/time.Second)
		ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
		l, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr)}, ts.meta)
		ok(t, err)
		ts.clock.Advance(c.after)
		_, err = ts.AuthenticateSession(ctx, "Bearer "+l.Token)
		ok(t, err)
		seen := ts.clock.Now().Truncate(time.Second)
		ok(t, ts.FlushLastSeen(ctx))
		var got time.Time
		ok(t, ts.db.View(ctx, func(tx store.Tx) error {
			s, err := tx.Session(l.Session.ID)
			if err == nil {
				got = s.LastSeenAt
			}
			return err
		}))
		if want := map[bool]time.Time{true: seen}[c.written]; !got.Equal(want) {
			t.Errorf("checked %v after the sign-in: stored lastSeenAt %v, want %v", c.after, got, want)
		}
	}
}

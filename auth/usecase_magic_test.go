package auth_test

import (
	"strings"
	"testing"

	"latchkey/auth"
)

// TestMagicLinkSignIn: the link mailed points at the verify path with
// its token and lives 15 minutes; its verify signs a new user in and
// returns the send-time redirectUrl; MagicLinkProject names the project
// of a pending link only.
func TestMagicLinkSignIn(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "link@example.com"
	const redirect = "http://localhost:3000/welcome"
	ok(t, ts.SendMagicLink(ctx, ts.project, addr, redirect, ts.meta))
	m := ts.lastMail(addr, "magic")
	if !strings.HasPrefix(m.Content.Link, ts.BaseURL()+auth.MagicPath+"?token=") || m.Content.TTLSeconds != 900 {
		t.Fatalf("mail %+v, want a link to the verify path for 15 minutes", m)
	}
	wantEvent(t, ts.lastEvent(), "magic_link", "send", "", false)
	token := ts.linkToken(addr)
	p, err := ts.MagicLinkProject(ctx, token)
	ok(t, err)
	if p.ID != ts.project.ID {
		t.Fatalf("link's project %s, want %s", p.ID, ts.project.ID)
	}

	l, err := ts.VerifyMagicLink(ctx, token, "", ts.meta)
	ok(t, err)
	if !l.IsNewUser || l.User.Email != addr || l.RedirectURL != redirect || l.Token == "" {
		t.Fatalf("login %+v, want a new user sent to %s", l, redirect)
	}
	ts.principal(l)
	wantEvent(t, ts.lastEvent(), "magic_link", "verify", "", true)
	if _, err := ts.MagicLinkProject(ctx, token); err == nil {
		t.Fatal("MagicLinkProject of a used link")
	}
}

// TestMagicLinkFailures: used, expired, unknown and missing tokens, and
// redirects outside the project's origins, with the categories their
// events record; a refused redirect leaves the link usable.
func TestMagicLinkFailures(t *testing.T) {
	t.Parallel()
	const addr = "fail@example.com"
	cases := []struct {
		name     string
		setup    func(ts *testService) (token, redirect string)
		want     *auth.Error
		category string
		project  bool // the event names the project
	}{
		{"used", func(ts *testService) (string, string) {
			ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta))
			tok := ts.linkToken(addr)
			_, err := ts.VerifyMagicLink(ctx, tok, "", ts.meta)
			ok(t, err)
			return tok, ""
		}, auth.ErrLinkUsed, auth.CatAlreadyUsed, true},
		{"expired", func(ts *testService) (string, string) {
			ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta))
			ts.clock.Advance(auth.MagicLifetime)
			return ts.linkToken(addr), ""
		}, auth.ErrLinkExpired, auth.CatExpired, true},
		{"unknown", func(ts *testService) (string, string) { return "made-up-token", "" },
			auth.ErrInvalidToken, auth.CatInvalidCode, false},
		{"missing", func(ts *testService) (string, string) { return "", "" },
			auth.ErrValidation, auth.CatValidation, false},
		{"redirect outside the origins", func(ts *testService) (string, string) {
			ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta))
			return ts.linkToken(addr), "https://evil.example.net/"
		}, auth.ErrInvalidRedirect, auth.CatValidation, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestService(t)
			token, redirect := tc.setup(ts)
			_, err := ts.VerifyMagicLink(ctx, token, redirect, ts.meta)
			wantErr(t, err, tc.want, tc.category)
			var last auth.EventView
			if tc.project {
				last = ts.lastEvent()
			} else {
				page, err := ts.Events(ctx, auth.EventQuery{})
				ok(t, err)
				last = page.Events[0]
				if last.ProjectID != nil {
					t.Fatalf("event of an unknown token names project %s", *last.ProjectID)
				}
			}
			wantEvent(t, last, "magic_link", "verify", tc.category, false)
			if tc.want == auth.ErrInvalidRedirect {
				if _, err := ts.VerifyMagicLink(ctx, token, "http://localhost:3000/ok", ts.meta); err != nil {
					t.Fatalf("the link after a refused redirect: %v", err)
				}
			}
		})
	}
}

// TestMagicLinkSendRefusals: a send-time redirectUrl outside the
// project's origins is INVALID_REDIRECT_URL and mails nothing; links
// share the address's send throttle rules but count apart from codes.
func TestMagicLinkSendRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "send@example.com"
	wantErr(t, ts.SendMagicLink(ctx, ts.project, addr, "https://elsewhere.example.org/", ts.meta), auth.ErrInvalidRedirect, auth.CatValidation)
	if n := len(ts.mailTo(addr)); n != 0 {
		t.Fatalf("%d messages after a refused redirect", n)
	}
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta)) // counted apart from the code
	wantErr(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta), auth.ErrTooManyRequests, auth.CatRateLimited)
}

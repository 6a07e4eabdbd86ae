package auth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
)

// commits returns a function that tells how many write transactions
// committed since commits was called; false on a store that does not
// count them (only a bbolt file does: store.File.CommitID), where tests
// skip their assertions on the count.
func commits(t *testing.T, s *Service) func() (int, bool) {
	t.Helper()
	f, ok := s.db.(store.File)
	if !ok {
		return func() (int, bool) { return 0, false }
	}
	before := f.CommitID()
	return func() (int, bool) { return f.CommitID() - before, true }
}

// storedEvents returns every stored event, newest first.
func storedEvents(t *testing.T, s *Service) []*store.AuthEvent {
	t.Helper()
	var evs []*store.AuthEvent
	s.db.View(ctx, func(tx store.Tx) error {
		var err error
		evs, _, err = tx.AuthEvents(store.AuthEventFilter{})
		return err
	})
	return evs
}

func suppressedTotal(rows []SuppressedView) int64 {
	var n int64
	for _, r := range rows {
		n += r.Count
	}
	return n
}

// TestSuppressUnknownToken is the disk-fill attack: made-up magic-link
// tokens each stored an event for 30 days. Now one client stores 10 a
// minute (projectId null); the rest are counted in memory without any
// write transaction, shown as suppressed, and flushed to the hourly
// counters.
func TestSuppressUnknownToken(t *testing.T) {
	t.Parallel()
	s, _, now := newPasskeyService(t)
	m := Meta{IP: "203.0.113.9", UserAgent: "attacker"}
	for i := range SuppressPerMinute {
		if _, err := s.VerifyMagicLink(ctx, fmt.Sprintf("made-up-%d", i), "", m); err != ErrInvalidToken {
			t.Fatalf("err=%v, want INVALID_TOKEN", err)
		}
	}
	wrote := commits(t, s)
	for i := range 500 {
		if _, err := s.VerifyMagicLink(ctx, fmt.Sprintf("flood-%d", i), "", m); err != ErrInvalidToken {
			t.Fatalf("err=%v, want INVALID_TOKEN", err)
		}
	}
	if n, ok := wrote(); ok && n != 0 {
		t.Fatalf("500 suppressed failures wrote %d transactions, want none", n)
	}
	if n := len(storedEvents(t, s)); n != SuppressPerMinute {
		t.Fatalf("%d events stored, want %d", n, SuppressPerMinute)
	}
	page, err := s.Events(ctx, EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != SuppressPerMinute || page.Events[0].ProjectID != nil {
		t.Fatalf("%d events, first projectId %v; want %d with projectId null", len(page.Events), page.Events[0].ProjectID, SuppressPerMinute)
	}
	want := []SuppressedView{{Hour: "2026-11-22T10:00:00Z", Method: "magic_link", Action: "verify", FailureCode: CatInvalidCode, Count: 500}}
	if got := page.Suppressed; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("suppressed=%+v, want %+v", got, want)
	}
	// The flush writes the counts in one transaction; the API shows the
	// same, now from the store.
	if err := s.FlushSuppressed(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := wrote(); ok && n != 1 {
		t.Fatalf("flush wrote %d transactions, want 1", n)
	}
	page, _ = s.Events(ctx, EventQuery{})
	if got := page.Suppressed; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("after the flush suppressed=%+v, want %+v", got, want)
	}
	// A minute later the client may store 10 more.
	*now = now.Add(time.Minute)
	for i := range 12 {
		s.VerifyMagicLink(ctx, fmt.Sprintf("later-%d", i), "", m)
	}
	if n := len(storedEvents(t, s)); n != 2*SuppressPerMinute {
		t.Fatalf("%d events stored, want %d", n, 2*SuppressPerMinute)
	}
	page, _ = s.Events(ctx, EventQuery{})
	if n := suppressedTotal(page.Suppressed); n != 502 {
		t.Fatalf("suppressed total %d, want 502", n)
	}
	// The chart counts every failure, stored or not.
	chart, err := s.FailureChart(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := chart.Counts[23][CatInvalidCode]; got != 522 || chart.Suppressed != 502 {
		t.Fatalf("chart: %d invalid_code in the current hour (want 522), %d suppressed (want 502)", got, chart.Suppressed)
	}
}

// TestSuppressKeys: the rate is per (project, client, method and action);
// an IPv6 client is its /64; successes and failures that name a user are
// always stored.
func TestSuppressKeys(t *testing.T) {
	t.Parallel()
	s, p, _ := newPasskeyService(t)
	fail := func(ip, method, action, userID string) {
		t.Helper()
		a := s.attempt(ctx, p.ID, method, action, Meta{IP: ip})
		a.userID = userID
		a.reject(ErrInvalidCode)
	}
	for range 15 {
		fail("203.0.113.1", "email_otp", "verify", "")
		fail("203.0.113.2", "email_otp", "verify", "")
		fail("203.0.113.1", "backup_code", "verify", "")
		fail("2001:db8:1:2::1", "email_otp", "verify", "")
		fail("2001:db8:1:2:ffff::9", "email_otp", "verify", "") // the same /64
		fail("2001:db8:1:3::1", "email_otp", "verify", "")      // another /64
		fail("203.0.113.1", "totp", "verify", "u1")             // names a user
	}
	if err := s.db.Update(ctx, func(tx store.Tx) error {
		for range 15 {
			a := s.attempt(ctx, p.ID, "email_otp", "verify", Meta{IP: "203.0.113.1"})
			a.userID = "u2"
			if err := a.ok(tx); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range storedEvents(t, s) {
		got[clientKey(e.IP)+" "+e.Method+" "+fmt.Sprint(e.UserID != "")]++
	}
	want := map[string]int{
		"203.0.113.1 email_otp false": 10, "203.0.113.2 email_otp false": 10, "203.0.113.1 backup_code false": 10,
		"2001:db8:1:2::/64 email_otp false": 10, "2001:db8:1:3::/64 email_otp false": 10,
		"203.0.113.1 totp true": 15, "203.0.113.1 email_otp true": 15,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}
	page, _ := s.Events(ctx, EventQuery{ProjectID: p.ID, Limit: 1000})
	if n := suppressedTotal(page.Suppressed); n != 5+5+5+20+5 {
		t.Fatalf("suppressed %d, want 40", n)
	}
	if page, _ := s.Events(ctx, EventQuery{ProjectID: "other"}); len(page.Suppressed) != 0 {
		t.Fatalf("another project's filter shows %v", page.Suppressed)
	}
}

// TestSuppressMemoryBounded: a flood from ever new addresses keeps at most
// maxSuppressWindows windows; failures past that are counted, not stored.
func TestSuppressMemoryBounded(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "bounds the in-memory suppression windows")
	s, p, now := newPasskeyService(t)
	stored := 0
	for i := range maxSuppressWindows + 1000 {
		k := suppressKey{project: p.ID, ip: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), method: "magic_link", action: "verify"}
		if s.suppress.admit(k, *now) {
			stored++
		}
	}
	if n := len(s.suppress.windows); n > maxSuppressWindows {
		t.Fatalf("%d windows, bound %d", n, maxSuppressWindows)
	}
	if stored != maxSuppressWindows {
		t.Fatalf("%d admitted, want %d", stored, maxSuppressWindows)
	}
	// A minute later the idle windows make room again.
	*now = now.Add(time.Minute)
	if !s.suppress.admit(suppressKey{project: p.ID, ip: "192.0.2.1"}, *now) {
		t.Fatal("a new client refused after the windows aged out")
	}
	s.suppress.prune(*now)
	if n := len(s.suppress.windows); n != 1 {
		t.Fatalf("%d windows after the sweep, want 1", n)
	}
}

// TestEventsQueryErrors: bad filters are 400 VALIDATION_ERROR with a
// clear message.
func TestEventsQueryErrors(t *testing.T) {
	t.Parallel()
	s, _, _ := newPasskeyService(t)
	for _, q := range []EventQuery{{FailureCode: "nope"}, {Before: "yesterday"}, {Before: strings.Repeat("g", 32)}} {
		_, err := s.Events(ctx, q)
		if e := AsError(err); e.Code != "VALIDATION_ERROR" || e.Message == "" {
			t.Errorf("%+v: err=%v, want VALIDATION_ERROR", q, err)
		}
	}
	if _, err := s.Events(ctx, EventQuery{Before: "2026-11-22T09:00:00Z", Limit: 5000}); err != nil {
		t.Fatal(err)
	}
	if got := pageSize(5000); got != MaxPageSize {
		t.Fatalf("pageSize(5000)=%d", got)
	}
}

package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// suppressedCount sums the suppressed counters of an events response.
func suppressedCount(t *testing.T, r *response) int {
	t.Helper()
	n := 0
	for _, c := range r.Body["suppressed"].([]any) {
		n += int(c.(map[string]any)["count"].(float64))
	}
	return n
}

// TestUnauthenticatedFailuresDoNotFillTheDisk is the disk-fill attack:
// every made-up magic-link token, unknown registration or bad signature
// stored an event (1.35 KB for 30 days; 50k requests grew the file by
// 68 MB), each in its own fsync'd transaction. Now one client stores 10
// such failures a minute per action; the rest are counted in memory, with
// no write at all, and shown as suppressed.
func TestUnauthenticatedFailuresDoNotFillTheDisk(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 100000}))
	_, secret := ts.method("bank_id", "direct")
	const flood = 300
	cases := []struct {
		name    string
		do      func(i int) *response
		status  int
		code    string
		project any // the events' projectId
	}{
		{"unknown magic-link token", func(i int) *response {
			return ts.do("GET", "/api/v1/magic/verify?token=made-up-"+fmt.Sprint(i), "", nil)
		}, 401, "INVALID_TOKEN", nil},
		{"unknown callback registration", func(i int) *response {
			return ts.do("POST", "/api/v1/external-auth/callback/"+fmt.Sprint("nope-", i), "", map[string]any{"externalUserId": "x", "verifiedAt": ts.Clock.Now().Format(time.RFC3339), "reference": "r"})
		}, 400, "INVALID_PAYLOAD", nil},
		{"unknown external id", func(i int) *response {
			b := ts.confirmBody(map[string]any{"externalUserId": fmt.Sprint("stranger-", i), "method": "bank_id"})
			return ts.confirm(b, sign(secret, b))
		}, 400, "INVALID_PAYLOAD", ts.Project.ID},
		{"unknown method", func(i int) *response {
			b := ts.confirmBody(map[string]any{"externalUserId": "x", "method": fmt.Sprint("m", i)})
			return ts.confirm(b, sign(secret, b))
		}, 400, "INVALID_PAYLOAD", ts.Project.ID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts.Clock.Advance(time.Hour) // a fresh minute and hour
			before := len(ts.events("?limit=1000"))
			for i := 0; i < 10; i++ {
				wantError(t, c.do(i), c.status, c.code)
			}
			wrote := ts.commits()
			for i := 10; i < flood; i++ {
				wantError(t, c.do(i), c.status, c.code)
			}
			if d, ok := wrote(); ok && d != 0 {
				t.Fatalf("%d suppressed failures wrote %d transactions, want none", flood-10, d)
			}
			r := ts.admin("GET", "/api/v1/admin/events?limit=1000", nil)
			evs := r.Body["events"].([]any)
			if got := len(evs) - before; got != 10 {
				t.Fatalf("%d events stored, want 10", got)
			}
			if p := evs[0].(map[string]any)["projectId"]; p != c.project {
				t.Fatalf("projectId=%v, want %v", p, c.project)
			}
			sup := r.Body["suppressed"].([]any)
			newest := sup[0].(map[string]any)
			if n := int(newest["count"].(float64)); n != flood-10 || newest["projectId"] != c.project || newest["hour"] != ts.Clock.Now().Truncate(time.Hour).Format(time.RFC3339) {
				t.Fatalf("suppressed=%v, want %d in this hour", newest, flood-10)
			}
		})
	}
	// The minute sweep writes the counts once; they read the same.
	before := ts.admin("GET", "/api/v1/admin/events?limit=1000", nil).Raw
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if after := ts.admin("GET", "/api/v1/admin/events?limit=1000", nil).Raw; string(after) != string(before) {
		t.Fatalf("the flush changed what the API shows:\n%s\n%s", before, after)
	}
}

// TestEventCapPerProject: a project keeps at most the cap of events, the
// oldest going first; another project and the events that name no
// project keep theirs.
func TestEventCapPerProject(t *testing.T) {
	t.Parallel()
	ts := newTestServerStore(t, store.Options{MaxEventsPerProject: 25})
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 100000}))
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherID := str(t, obj(t, other.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherID, "mode": "test"})
	for i := range 5 {
		wantOK(t, ts.do("POST", "/api/v1/otp/send", otherKey, map[string]any{"email": fmt.Sprintf("o%d@example.com", i)}))
	}
	for i := range 40 {
		wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": fmt.Sprintf("a%02d@example.com", i)}))
		ts.Clock.Advance(time.Second)
	}
	got := ts.events("?limit=1000&projectId=" + ts.Project.ID)
	if len(got) != 25 || got[0]["email"] != "a39@example.com" || got[24]["email"] != "a15@example.com" {
		t.Fatalf("%d events kept, newest %v, oldest %v; want a39 … a15", len(got), got[0]["email"], got[len(got)-1]["email"])
	}
	if n := len(ts.events("?limit=1000&projectId=" + otherID)); n != 5 {
		t.Fatalf("other project keeps %d, want 5", n)
	}
	if n := len(ts.events("?limit=1000")); n != 30 {
		t.Fatalf("%d events in all, want 30", n)
	}
}

package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// TestEventsPages: pages of at most 1,000 events, newest first, cut by the
// before cursor; every filter pages the same way; events that name no
// project have projectId null and appear only without a projectId filter.
func TestEventsPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherID := str(t, obj(t, other.Body, "project"), "id")
	start := ts.Clock.Now().Add(-2 * time.Hour)
	const n = 2500
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			e := &store.AuthEvent{ID: fmt.Sprintf("ev-%04d", i), Method: "email_otp", Action: "verify", IP: "203.0.113.1",
				CreatedAt: start.Add(time.Duration(i) * time.Second)}
			switch i % 5 {
			case 0:
				e.ProjectID, e.Success = ts.Project.ID, true
			case 1, 2:
				e.ProjectID, e.FailureCode = ts.Project.ID, "invalid_code"
			case 3:
				e.ProjectID, e.FailureCode = otherID, "invalid_code"
			case 4:
				e.FailureCode = "invalid_code" // no project
			}
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// walk pages through the API and returns the ids, checking each page.
	walk := func(t *testing.T, query string, limit int) []string {
		var ids []string
		before := ""
		for pages := 0; ; pages++ {
			q := query + "&limit=" + fmt.Sprint(limit)
			if before != "" {
				q += "&before=" + url.QueryEscape(before)
			}
			r := ts.admin("GET", "/api/v1/admin/events?"+q, nil)
			wantOK(t, r)
			if len(r.Body) != 4 {
				t.Fatalf("body keys %v, want success, events, nextCursor, suppressed", r.Body)
			}
			evs := r.Body["events"].([]any)
			if len(evs) > min(limit, 1000) {
				t.Fatalf("page of %d events", len(evs))
			}
			for _, e := range evs {
				ids = append(ids, e.(map[string]any)["id"].(string))
			}
			next, ok := r.Body["nextCursor"].(string)
			if !ok {
				if r.Body["nextCursor"] != nil {
					t.Fatalf("nextCursor=%v", r.Body["nextCursor"])
				}
				return ids
			}
			before = next
		}
	}
	want := func(keep func(i int) bool) []string {
		var out []string
		for i := n - 1; i >= 0; i-- {
			if keep(i) {
				out = append(out, fmt.Sprintf("ev-%04d", i))
			}
		}
		return out
	}
	cases := []struct {
		name, query string
		limit       int
		keep        func(i int) bool
	}{
		{"all, limit 1000", "", 1000, func(int) bool { return true }},
		{"all, limit above 1000 is 1000", "", 5000, func(int) bool { return true }},
		{"project", "projectId=" + ts.Project.ID, 333, func(i int) bool { return i%5 <= 2 }},
		{"project and failure", "projectId=" + ts.Project.ID + "&failureCode=invalid_code", 1000, func(i int) bool { return i%5 == 1 || i%5 == 2 }},
		{"failure in every project and none", "failureCode=invalid_code", 700, func(i int) bool { return i%5 != 0 }},
		{"other project", "projectId=" + otherID, 100, func(i int) bool { return i%5 == 3 }},
		{"matches nothing", "projectId=" + otherID + "&failureCode=expired", 100, func(int) bool { return false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := walk(t, c.query, c.limit)
			w := want(c.keep)
			if strings.Join(got, ",") != strings.Join(w, ",") {
				t.Fatalf("%d events, want %d (first %v)", len(got), len(w), got[:min(3, len(got))])
			}
		})
	}
	// Default page: 100, newest first; events that name no project have
	// projectId null.
	r := ts.admin("GET", "/api/v1/admin/events", nil)
	evs := r.Body["events"].([]any)
	if len(evs) != 100 || evs[0].(map[string]any)["id"] != "ev-2499" || evs[0].(map[string]any)["projectId"] != nil {
		t.Fatalf("default page: %d events, first %v", len(evs), evs[0])
	}
	if _, ok := r.Body["nextCursor"].(string); !ok {
		t.Fatalf("nextCursor=%v on a full page", r.Body["nextCursor"])
	}
	// before also takes a time: events older than it.
	got := ts.events("?limit=3&before=" + url.QueryEscape(start.Add(10*time.Second).Format(time.RFC3339)))
	if len(got) != 3 || got[0]["id"] != "ev-0009" {
		t.Fatalf("before a time: %v", got)
	}
	for _, bad := range []string{"?before=yesterday", "?before=00", "?failureCode=nope", "?failureCode=INVALID_CODE", "?limit=0", "?limit=x"} {
		t.Run(bad, func(t *testing.T) {
			r := ts.admin("GET", "/api/v1/admin/events"+bad, nil)
			wantError(t, r, 400, "VALIDATION_ERROR")
			if strings.Contains(bad, "failureCode") && !strings.Contains(r.Body["error"].(string), "invalid_code") {
				t.Fatalf("error %q does not list the categories", r.Body["error"])
			}
		})
	}
}

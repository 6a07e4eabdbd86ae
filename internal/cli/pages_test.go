package cli_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// addUsers stores n users of the default project directly.
func (ts *testServer) addUsers(n int) []string {
	ts.t.Helper()
	var emails []string
	err := ts.db.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			u := &store.User{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ProjectID: ts.Project.ID,
				Email: fmt.Sprintf("u%03d@example.com", i), CreatedAt: time.Now().UTC()}
			emails = append(emails, u.Email)
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return emails
}

var emailCell = regexp.MustCompile(`u\d{3}@example\.com`)

// TestUserListPages: user list prints a page and the cursor of the next;
// --cursor continues; --all follows every page (with --json, one body
// per page).
func TestUserListPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	all := ts.addUsers(25)
	pid := ts.Project.ID

	out := ts.ok("user", "list", "--project", pid, "--limit", "10")
	if got := emailCell.FindAllString(out, -1); !slices.Equal(got, all[:10]) {
		t.Fatalf("first page %v", got)
	}
	m := regexp.MustCompile(`More users: add --cursor (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no cursor printed:\n%s", out)
	}
	out = ts.ok("user", "list", "--project", pid, "--limit", "10", "--cursor", m[1])
	if got := emailCell.FindAllString(out, -1); !slices.Equal(got, all[10:20]) {
		t.Fatalf("second page %v", got)
	}
	out = ts.ok("user", "list", "--project", pid, "--limit", "10", "--all")
	if got := emailCell.FindAllString(out, -1); !slices.Equal(got, all) || strings.Contains(out, "More users") {
		t.Fatalf("--all printed %v\n%s", got, out)
	}
	if out := ts.ok("user", "list", "--project", pid); strings.Contains(out, "More users") || len(emailCell.FindAllString(out, -1)) != 25 {
		t.Fatalf("default page:\n%s", out)
	}

	// --all --json: one response body per page.
	raw := ts.ok("user", "list", "--project", pid, "--limit", "10", "--all", "--json")
	dec := json.NewDecoder(strings.NewReader(raw))
	var pages []int
	var got []string
	for dec.More() {
		var page struct {
			Users []struct {
				Email string `json:"email"`
			} `json:"users"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := dec.Decode(&page); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(page.Users))
		for _, u := range page.Users {
			got = append(got, u.Email)
		}
	}
	if !slices.Equal(pages, []int{10, 10, 5}) || !slices.Equal(got, all) {
		t.Fatalf("--all --json pages %v, users %v", pages, got)
	}
	wantFail(t, ts.cli("user", "list", "--project", pid, "--cursor", "!!"), 1, "(VALIDATION_ERROR)")
}

// TestEventsPages: events prints the --before cursor of older events and
// takes it back.
func TestEventsPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	t0 := time.Now().UTC().Add(-time.Hour)
	err := ts.db.Update(ctx, func(tx store.Tx) error {
		for i := range 5 {
			e := &store.AuthEvent{ID: fmt.Sprint("ev-", i), ProjectID: ts.Project.ID, Email: fmt.Sprintf("e%d@example.com", i),
				Method: "email_otp", Action: "send", Success: true, CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := ts.ok("events", "--limit", "3")
	wantContains(t, out, "e4@example.com", "e2@example.com")
	m := regexp.MustCompile(`Older events: add --before (\S+)`).FindStringSubmatch(out)
	if m == nil || strings.Contains(out, "e1@example.com") {
		t.Fatalf("first page:\n%s", out)
	}
	out = ts.ok("events", "--limit", "3", "--before", m[1])
	wantContains(t, out, "e1@example.com", "e0@example.com")
	if strings.Contains(out, "e2@example.com") || strings.Contains(out, "Older events") {
		t.Fatalf("second page:\n%s", out)
	}
	out = ts.ok("events", "--before", t0.Add(90*time.Second).Format(time.RFC3339))
	if !strings.Contains(out, "e1@example.com") || strings.Contains(out, "e2@example.com") {
		t.Fatalf("--before a time:\n%s", out)
	}
	wantFail(t, ts.cli("events", "--before", "yesterday"), 1, "(VALIDATION_ERROR)")
}

package httpapi_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"latchkey/store"
)

// addUsers stores n users of the default project directly (user0000@…,
// user0001@… in email order) and returns their addresses.
func (ts *testServer) addUsers(n int) []string {
	ts.t.Helper()
	var emails []string
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			u := &store.User{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ProjectID: ts.Project.ID,
				Email: fmt.Sprintf("user%04d@example.com", i), CreatedAt: ts.Clock.Now()}
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

// TestAdminUsersPages is the 78 MB answer: GET /admin/users returned
// every user of the project at once. Now pages of limit users (default
// 100, at most 1,000) in email order follow nextCursor, null on the last
// page; the email filter pages the same way.
func TestAdminUsersPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	all := ts.addUsers(1250)
	base := "/api/v1/admin/users?projectId=" + ts.Project.ID
	walk := func(t *testing.T, query string) (emails []string, sizes []int) {
		t.Helper()
		cursor := ""
		for pages := 0; pages < 100; pages++ {
			q := base + query
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := ts.admin("GET", q, nil)
			wantOK(t, r)
			if len(r.Body) != 3 {
				t.Fatalf("body keys %v, want success, users, nextCursor", r.Body)
			}
			users := r.Body["users"].([]any)
			sizes = append(sizes, len(users))
			for _, u := range users {
				emails = append(emails, u.(map[string]any)["email"].(string))
			}
			next, ok := r.Body["nextCursor"].(string)
			if !ok {
				if r.Body["nextCursor"] != nil {
					t.Fatalf("nextCursor=%v", r.Body["nextCursor"])
				}
				return emails, sizes
			}
			cursor = next
		}
		t.Fatal("pagination does not end")
		return nil, nil
	}
	cases := []struct {
		name, query string
		sizes       []int
		want        []string
	}{
		{"default limit", "", []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 50}, all},
		{"limit 1000", "&limit=1000", []int{1000, 250}, all},
		{"limit above 1000 is 1000", "&limit=100000", []int{1000, 250}, all},
		{"odd limit", "&limit=499", []int{499, 499, 252}, all},
		{"email prefix", "&email=user01&limit=40", []int{40, 40, 20}, all[100:200]},
		{"exact address", "&email=user0042@example.com", []int{1}, all[42:43]},
		{"no match", "&email=nobody", []int{0}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			emails, sizes := walk(t, c.query)
			if !slices.Equal(sizes, c.sizes) || !slices.Equal(emails, c.want) {
				t.Fatalf("pages %v (%d users), want %v (%d)", sizes, len(emails), c.sizes, len(c.want))
			}
		})
	}
	// A cursor from an exact-address page, or past the end, is an empty page.
	r := ts.admin("GET", base+"&email=user0042@example.com&cursor=dXNlcjAwNDJAZXhhbXBsZS5jb20", nil)
	if wantOK(t, r); len(r.Body["users"].([]any)) != 0 || r.Body["nextCursor"] != nil {
		t.Fatalf("after the only match: %s", r.Raw)
	}
	for _, bad := range []string{"&cursor=!!!", "&cursor=%20", "&limit=0", "&limit=-5"} {
		r := ts.admin("GET", base+bad, nil)
		wantError(t, r, 400, "VALIDATION_ERROR")
		if strings.Contains(bad, "cursor") && !strings.Contains(r.Body["error"].(string), "nextCursor") {
			t.Fatalf("error %q does not say what a cursor is", r.Body["error"])
		}
	}
}

package httpapi_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"latchkey/store/storetest"
)

// replica starts a second server on ts's store, as another replica
// behind the load balancer: same database, same master key and clock.
func (ts *testServer) replica() *testServer {
	ts.t.Helper()
	r := &testServer{t: ts.t, Clock: ts.Clock, dsn: ts.dsn, opts: ts.opts, storeOpts: ts.storeOpts, api: ts.api,
		Key: ts.Key, Project: ts.Project}
	r.start()
	return r
}

// TestDashboardSessionAcrossReplicas: a dashboard sign-in on one
// replica is a sign-in on every replica, and its flash (a key shown
// once) follows the operator from one to the other; so does the
// sign-out.
func TestDashboardSessionAcrossReplicas(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("replicas share a database: this test runs on the postgres pass (on bbolt dashboard sessions are in the one process's memory)")
	}
	a := newTestServer(t)
	b := a.replica()
	jar, _ := cookiejar.New(nil) // cookies are per host, not port: both replicas get them
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(ts *testServer, method, path string, form url.Values) (int, string) {
		t.Helper()
		var res *http.Response
		var err error
		if method == "POST" {
			res, err = client.PostForm(ts.URL+path, form)
		} else {
			res, err = client.Get(ts.URL + path)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	if code, _ := do(a, "POST", "/admin/login", url.Values{"token": {testAdminToken}}); code != http.StatusSeeOther {
		t.Fatalf("sign-in on replica a: %d", code)
	}
	proj := "/admin/projects/" + a.Project.ID
	code, body := do(b, "GET", proj, nil)
	if code != 200 || strings.Contains(body, `name="token"`) {
		t.Fatalf("replica b does not know the sign-in: %d", code)
	}
	csrf := csrfField.FindStringSubmatch(body)[1]
	if code, _ := do(b, "POST", proj+"/keys", url.Values{"mode": {"test"}, "csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("create a key on replica b: %d", code)
	}
	keyRE := regexp.MustCompile(`sk_test_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}`)
	_, body = do(a, "GET", proj, nil)
	if keyRE.FindString(body) == "" {
		t.Fatal("replica a does not show the key created on replica b")
	}
	if _, body = do(b, "GET", proj, nil); keyRE.FindString(body) != "" {
		t.Fatal("the key was shown twice")
	}
	if code, _ := do(a, "POST", "/admin/logout", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("sign-out on replica a: %d", code)
	}
	if _, body = do(b, "GET", proj, nil); !strings.Contains(body, `name="token"`) {
		t.Fatal("still signed in on replica b after signing out on a")
	}
}

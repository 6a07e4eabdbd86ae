package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"testing"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// BenchmarkForwardAuthRatios measures the forward-auth check with a
// valid cookie (a signed_in rule: the session check, whose state
// carries the identity headers' values) against GET /session and two
// floors, in the same run: rounds of one second alternate the four (in a
// rotating order) and the median round's ratios are reported, with the
// cpu ratios (the process's CPU time per request, the other's over the
// check's), as BenchmarkSessionRatios does. The floors are two trivial
// handlers on the same stack, reading nothing from the store: the plain
// floor, GET /bench/floor, which the other ratio benchmarks use (an empty
// GET, a small JSON answer), and the floor of a forward-auth request,
// GET /bench/floor-forward-auth/:projectId (forwardAuthFloor), which
// gets the check's very request (its cookie and X-Original-URL) and
// answers as the check does (200, the four Remote-* headers with fixed
// values of the same lengths, the same body). fwd-%fwd-floor is the
// check's share of the latter: what the check costs beyond what any
// handler of such a request costs; fwd-floor-%floor is what the
// request's shape alone costs. Every protected request passes through
// the check, so it should cost about what GET /session does. One op is
// the whole experiment:
//
//	go test -run XXX -bench ForwardAuthRatios -benchtime 1x ./httpapi/
func BenchmarkForwardAuthRatios(b *testing.B) {
	e, tokens, check := newForwardAuthBench(b)
	floorPath := "/bench/floor-forward-auth/" + e.project.ID
	kinds := []ratioKind{
		{name: "floor", do: func(int) error { return e.get("/bench/floor", "") }},
		{name: "session", do: func(w int) error { return e.get("/api/v1/session", tokens[w]) }},
		{name: "forward-auth", do: func(w int) error { return check(w, "") }},
		{name: "fwd-floor", do: func(w int) error { return check(w, floorPath) }},
	}
	for range b.N {
		ofSession := e.ratiosAgainst(b, "fwd", kinds)
		b.ReportMetric(100*ofSession[0], "fwd-min-%session")
	}
}

// BenchmarkForwardAuth is the forward-auth check with a valid cookie
// (a signed_in rule) from 32 clients, each with its own session (for
// profiles: BenchmarkForwardAuthRatios gives the ratios).
func BenchmarkForwardAuth(b *testing.B) {
	e, _, check := newForwardAuthBench(b)
	e.load(b, benchConc, func(w, _ int) error { return check(w, "") })
}

// BenchmarkForwardAuthFloor is the floor of a forward-auth request
// (forwardAuthFloor) from 32 clients sending the check's requests: with
// -benchmem, the allocations of the request's shape alone.
func BenchmarkForwardAuthFloor(b *testing.B) {
	e, _, check := newForwardAuthBench(b)
	path := "/bench/floor-forward-auth/" + e.project.ID
	e.load(b, benchConc, func(w, _ int) error { return check(w, path) })
}

// forwardAuthFloor is the floor of a forward-auth request: a trivial
// handler on the same stack that answers as the check does, 200 with the
// four Remote-* headers (fixed values: those of one bench user, set
// before the load) and the check's body, reading nothing.
type forwardAuthFloor struct {
	user, email, groups, name []string
}

func (f *forwardAuthFloor) serve(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	h := w.Header()
	h[hdrRemoteUser], h[hdrRemoteEmail], h[hdrRemoteGroups], h[hdrRemoteName] = f.user, f.email, f.groups, f.name
	ok(w, nil)
}

// newForwardAuthBench returns a bench server whose project protects
// app.example.com (a signed_in rule) for proxies on loopback, a session
// token per client, and check, which sends client w's forward-auth
// request (X-Original-URL https://app.example.com/page, the forward-auth
// token of w's session as the cookie: what nginx sends) to path (the check's when "") and wants
// 200 with Remote-User. The requests' headers are built once per client,
// as a proxy copies them, not through http.Header's canonicalizing
// setters. The floor of a forward-auth request answers with the first
// client's identity.
func newForwardAuthBench(b *testing.B) (e *benchEnv, tokens []string, check func(w int, path string) error) {
	e = newBenchEnv(b)
	e.server.proxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	fa := []byte(`{"cookieDomain":"example.com","rules":[{"host":"app.example.com","policy":"signed_in"}]}`)
	if _, err := e.svc.UpdateProject(ctx, e.project.ID, auth.ProjectInput{ForwardAuth: fa}); err != nil {
		b.Fatal(err)
	}
	const original = "https://app.example.com/page"
	tokens = make([]string, benchConc)
	cookies := make([][]string, benchConc)
	originals := []string{original}
	var first string
	for i := range tokens {
		tokens[i] = e.loginDirect(b, fmt.Sprintf("fwd%d@example.com", i))
		// The cookie holds the session's forward-auth token, as the
		// sign-in page sets it.
		pr, err := e.svc.AuthenticateSession(ctx, "Bearer "+tokens[i])
		if err != nil {
			b.Fatal(err)
		}
		ftok, err := e.svc.ForwardAuthToken(&auth.ForwardAuthTarget{Project: e.project}, pr)
		if err != nil {
			b.Fatal(err)
		}
		cookies[i] = []string{fwdCookie + e.project.ID + "=" + ftok}
		if i == 0 {
			first = ftok
		}
	}
	f, err := auth.ParseOriginalURL(original)
	if err != nil {
		b.Fatal(err)
	}
	id, err := e.svc.ForwardAuthCheck(ctx, e.project.ID, f, first)
	if err != nil {
		b.Fatal(err)
	}
	*e.fwdFloor = forwardAuthFloor{user: []string{id.UserID}, email: []string{id.Email}, groups: []string{""}, name: []string{id.Name}}
	checkURL := e.url + "/api/v1/forward-auth/" + e.project.ID
	check = func(w int, path string) error {
		u := checkURL
		if path != "" {
			u = e.url + path
		}
		req, _ := http.NewRequest("GET", u, nil)
		req.Header[hdrOriginalURL] = originals
		req.Header["Cookie"] = cookies[w]
		res, err := e.client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get(hdrRemoteUser) == "" {
			return fmt.Errorf("forward-auth: status %d, Remote-User %q", res.StatusCode, res.Header.Get(hdrRemoteUser))
		}
		return nil
	}
	return e, tokens, check
}

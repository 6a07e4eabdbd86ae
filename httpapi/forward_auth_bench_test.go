package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"testing"

	"latchkey/auth"
)

// BenchmarkForwardAuthRatios measures the forward-auth check with a
// valid cookie (a signed_in rule: the session check, whose state
// carries the identity headers' values) against GET /session and the floor,
// in the same run: rounds of one second alternate the three (in a
// rotating order) and the median round's ratios are reported, with the
// cpu ratios (the process's CPU time per request, the other's over the
// check's: of GET /session and of the floor), as BenchmarkSessionRatios does. Every protected request
// passes through the check, so it should cost about what GET /session
// does. One op is the whole experiment:
//
//	go test -run XXX -bench ForwardAuthRatios -benchtime 1x ./httpapi/
func BenchmarkForwardAuthRatios(b *testing.B) {
	e, tokens, check := newForwardAuthBench(b)
	kinds := []ratioKind{
		{name: "floor", do: func(int) error { return e.get("/bench/floor", "") }},
		{name: "session", do: func(w int) error { return e.get("/api/v1/session", tokens[w]) }},
		{name: "forward-auth", do: func(w int) error { return check(tokens[w]) }},
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
	e, tokens, check := newForwardAuthBench(b)
	e.load(b, benchConc, func(w, _ int) error { return check(tokens[w]) })
}

// newForwardAuthBench returns a bench server whose project protects
// app.example.com (a signed_in rule) for proxies on loopback, a session
// token per client, and check, which asks the forward-auth check about
// https://app.example.com/page with a token as the cookie and wants 200
// with Remote-User.
func newForwardAuthBench(b *testing.B) (e *benchEnv, tokens []string, check func(tok string) error) {
	e = newBenchEnv(b)
	e.server.proxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	fa := []byte(`{"cookieDomain":"example.com","rules":[{"host":"app.example.com","policy":"signed_in"}]}`)
	if _, err := e.svc.UpdateProject(ctx, e.project.ID, auth.ProjectInput{ForwardAuth: fa}); err != nil {
		b.Fatal(err)
	}
	tokens = make([]string, benchConc)
	for i := range tokens {
		tokens[i] = e.loginDirect(b, fmt.Sprintf("fwd%d@example.com", i))
	}
	check = func(tok string) error {
		req, _ := http.NewRequest("GET", e.url+"/api/v1/forward-auth/"+e.project.ID, nil)
		req.Header.Set("X-Original-URL", "https://app.example.com/page")
		req.AddCookie(&http.Cookie{Name: fwdCookie + e.project.ID, Value: tok})
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

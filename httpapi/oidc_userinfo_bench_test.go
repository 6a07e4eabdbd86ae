package httpapi

import "testing"

// BenchmarkUserinfoRatios measures the provider's userinfo with an
// access token against the floor and GET /session, in the same run:
// rounds of one second alternate the three (in a rotating order) and
// the median round's ratios are reported, with the cpu ratios (the
// process's CPU time per request, the other's over userinfo's), as
// BenchmarkSessionRatios does. Each of the 32 clients has its own user,
// session and access token. BenchmarkOIDCRatios measures userinfo
// beside the code exchanges; this one alone is quicker. One op is the
// whole experiment:
//
//	go test -run XXX -bench UserinfoRatios -benchtime 1x ./httpapi/
func BenchmarkUserinfoRatios(b *testing.B) {
	e := newOIDCBench(b)
	ats := e.accessTokens(b, e.noRedirect())
	kinds := []ratioKind{
		{name: "floor", do: func(int) error { return e.get("/bench/floor", "") }},
		{name: "session", do: func(w int) error { return e.get("/api/v1/session", e.tokens[w]) }},
		{name: "userinfo", do: func(w int) error { return e.userinfo(ats[w]) }},
	}
	for range b.N {
		e.ratiosAgainst(b, "userinfo", kinds)
	}
}

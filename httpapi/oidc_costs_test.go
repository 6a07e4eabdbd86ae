package httpapi_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"latchkey/store"
	"latchkey/store/storetest"
)

// What a sign-in with a session and a code exchange cost the store:
// write transactions (each an fsync on a bbolt file) and, on
// PostgreSQL, round trips (docs/performance.md). The bounds are the
// counts once the exchange's writes were merged, the repeated reads of
// one request cut and a sign-in with a session answered at the
// authorization endpoint (before: an exchange was 2 commits and 17
// round trips, 19 with a refresh token; a sign-in with a session 3
// commits and 17 and 16 round trips, once 27 and 26); a change that
// adds a transaction or a round trip to either path fails here.

// roundTripCount counts the round trips to PostgreSQL
// (store.Options.ObserveRoundTrip).
type roundTripCount struct{ n atomic.Int64 }

func (c *roundTripCount) observe(int) { c.n.Add(1) }

// since returns a function that tells how many round trips were made
// since since was called.
func (c *roundTripCount) since() func() int64 {
	before := c.n.Load()
	return func() int64 { return c.n.Load() - before }
}

func TestOIDCExchangeCosts(t *testing.T) {
	t.Parallel()
	var trips roundTripCount
	// The replica feed's reads (every FeedInterval) would land in any
	// count: they wait an hour here.
	ts := newTestServerStore(t, store.Options{ObserveRoundTrip: trips.observe, FeedInterval: time.Hour})
	postgres := storetest.Backend(t) == "postgres"
	// A session first, which every sign-in measured reuses.
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	first := ts.newRP(ts.Project.ID, map[string]any{"name": "First", "firstParty": true})
	first.answer(b.signIn(first.authorize(b, verifier, "st", "no"), "costs@example.com"))
	for _, c := range []struct {
		name    string
		body    map[string]any
		refresh bool // the client asks for a refresh token (offline_access)
		// The bounds: write transactions of the sign-in with a session
		// (the authorization endpoint, which answers it) and of the
		// exchange; round
		// trips of each on PostgreSQL.
		ssoCommits, exchangeCommits int
		ssoTrips, exchangeTrips     int64
	}{
		{name: "third party", body: map[string]any{"name": "Costs", "firstParty": false},
			ssoCommits: 1, exchangeCommits: 1, ssoTrips: 8, exchangeTrips: 10},
		{name: "first party ES256", body: map[string]any{"name": "Costs ES", "firstParty": true, "idTokenAlg": "ES256",
			"grantTypes": []string{"authorization_code", "refresh_token"}}, refresh: true,
			ssoCommits: 1, exchangeCommits: 1, ssoTrips: 7, exchangeTrips: 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			rp := ts.newRP(ts.Project.ID, c.body)
			if c.refresh {
				rp.config.Scopes = append(rp.config.Scopes, "offline_access")
			}
			// The first code of the client (for a third-party client,
			// after the consent page); the one measured is the next.
			rp.exchange(rp.code(b, verifier), verifier)

			commits, rts := ts.commits(), trips.since()
			code := rp.code(b, verifier)
			ssoCommits, counted := commits()
			ssoTrips := rts()

			commits, rts = ts.commits(), trips.since()
			r := rp.exchange(code, verifier)
			exCommits, _ := commits()
			exTrips := rts()
			if r.Status != http.StatusOK || r.Body["id_token"] == nil || (r.Body["refresh_token"] != nil) != c.refresh {
				t.Fatalf("exchange: %d %s", r.Status, r.Raw)
			}
			t.Logf("sign-in with a session: %d commits, %d round trips; exchange: %d commits, %d round trips",
				ssoCommits, ssoTrips, exCommits, exTrips)
			if counted && (ssoCommits > c.ssoCommits || exCommits > c.exchangeCommits) {
				t.Errorf("write transactions: sign-in with a session %d (at most %d), exchange %d (at most %d)",
					ssoCommits, c.ssoCommits, exCommits, c.exchangeCommits)
			}
			if postgres && (ssoTrips > c.ssoTrips || exTrips > c.exchangeTrips) {
				t.Errorf("round trips: sign-in with a session %d (at most %d), exchange %d (at most %d)",
					ssoTrips, c.ssoTrips, exTrips, c.exchangeTrips)
			}
		})
	}
}

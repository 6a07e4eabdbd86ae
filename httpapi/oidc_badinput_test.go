package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// TestOIDCAuthorizeNotText: an authorization request whose prompt
// holds bytes that are not UTF-8 (found by FuzzOIDCAuthorizeQuery) is
// an invalid_request redirect to the client, on both stores (PostgreSQL
// would refuse to keep it: never a server_error).
func TestOIDCAuthorizeNotText(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	u := rp.config.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())) + "&prompt=%80login"
	pg := b.get(u)
	if pg.Status != http.StatusFound || !strings.HasPrefix(pg.Location, rpRedirect+"?") {
		t.Fatalf("got %d %q %s, want an error redirect", pg.Status, pg.Location, pg.Body)
	}
	q, _ := url.Parse(pg.Location)
	if e := q.Query().Get("error"); e != "invalid_request" || q.Query().Get("error_description") == "" || q.Query().Get("state") != "st" {
		t.Fatalf("error redirect %s, want invalid_request with a description and the state", pg.Location)
	}
}

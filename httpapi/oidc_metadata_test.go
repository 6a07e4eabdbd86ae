package httpapi_test

import (
	"net/http"
	"reflect"
	"testing"
)

// TestOIDCAuthorizationServerMetadata: an issuer's OAuth 2.0
// Authorization Server Metadata is where RFC 8414 puts it, the
// well-known name before the issuer's path
// (/.well-known/oauth-authorization-server/oidc/<project id>), and is
// the discovery document (the same issuer and fields), readable from
// any page (CORS, preflight answered); a project that does not exist is
// 404 PROJECT_NOT_FOUND there too.
func TestOIDCAuthorizationServerMetadata(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	disc := ts.do("GET", "/oidc/"+ts.Project.ID+"/.well-known/openid-configuration", "", nil)
	req, _ := http.NewRequest("GET", ts.URL+"/.well-known/oauth-authorization-server/oidc/"+ts.Project.ID, nil)
	req.Header.Set("Origin", "https://agent.example.org")
	meta := ts.send(req)
	if meta.Status != http.StatusOK || meta.Body["issuer"] != ts.issuer(ts.Project.ID) || !reflect.DeepEqual(meta.Body, disc.Body) {
		t.Fatalf("RFC 8414 metadata: %d %s, want the discovery document %s", meta.Status, meta.Raw, disc.Raw)
	}
	if meta.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("RFC 8414 metadata from a page: Access-Control-Allow-Origin %q", meta.Header.Get("Access-Control-Allow-Origin"))
	}
	pre, _ := http.NewRequest("OPTIONS", ts.URL+"/.well-known/oauth-authorization-server/oidc/"+ts.Project.ID, nil)
	pre.Header.Set("Origin", "https://agent.example.org")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	if r := ts.send(pre); r.Status >= 300 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("RFC 8414 metadata preflight: %d %v", r.Status, r.Header)
	}
	wantError(t, ts.do("GET", "/.well-known/oauth-authorization-server/oidc/no-such-project", "", nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
}

package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// The clients of a project's OpenID provider, over real HTTP on the
// test backend.

func clientsPath(ts *testServer, rest string) string {
	return "/api/v1/admin/projects/" + ts.Project.ID + "/clients" + rest
}

// storedClient reads a client row from the store.
func (ts *testServer) storedClient(projectID, id string) (*store.OIDCClient, error) {
	var c *store.OIDCClient
	err := ts.DB.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.OIDCClient(projectID, id)
		return err
	})
	return c, err
}

// TestClientsAdmin: create (defaults, the secret once, a public client
// without one), list, get, a partial update, secret rotation and
// deletion, each as the admin API answers it.
func TestClientsAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("POST", clientsPath(ts, ""), map[string]any{
		"name": "Grafana", "type": "confidential", "redirectUris": []string{"https://grafana.example.com/login/generic_oauth"},
	})
	wantOK(t, r)
	c := obj(t, r.Body, "client")
	id := str(t, c, "id")
	secret := str(t, r.Body, "clientSecret")
	if !strings.HasPrefix(secret, "lkcs_") || len(secret) != 48 {
		t.Fatalf("clientSecret=%q, want lkcs_ and 43 characters", secret)
	}
	want := map[string]any{"name": "Grafana", "type": "confidential", "projectId": ts.Project.ID,
		"issuer": ts.URL + "/oidc/" + ts.Project.ID, "backchannelLogoutUri": nil, "firstParty": false, "requireMfa": false,
		"idTokenAlg": "RS256", "accessTokenLifetimeSeconds": 3600.0, "refreshTokenLifetimeSeconds": 2592000.0,
		"refreshTokenIdleSeconds": 604800.0, "createdAt": "2026-11-22T10:00:00.000Z", "updatedAt": "2026-11-22T10:00:00.000Z"}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("client.%s=%v, want %v", k, c[k], v)
		}
	}
	lists := map[string]string{"grantTypes": "authorization_code", "scopes": "openid profile email groups offline_access",
		"redirectUris": "https://grafana.example.com/login/generic_oauth", "postLogoutRedirectUris": ""}
	for k, v := range lists {
		if got := joined(t, c[k]); got != v {
			t.Errorf("client.%s=%q, want %q", k, got, v)
		}
	}
	if claims, ok := c["claims"].(map[string]any); !ok || len(claims) != 0 {
		t.Errorf("claims=%v, want {}", c["claims"])
	}
	row, err := ts.storedClient(ts.Project.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(row.SecretHash), secret) || !ts.Svc.CheckClientSecret(row, secret) || ts.Svc.CheckClientSecret(row, secret+"x") {
		t.Fatal("the stored secret is not the keyed hash of the secret shown")
	}

	pub := ts.admin("POST", clientsPath(ts, ""), map[string]any{
		"name": "CLI", "type": "public", "redirectUris": []string{"http://127.0.0.1/callback", "http://[::1]/callback", "com.example.cli:/cb"},
		"grantTypes": []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"},
		"scopes":     []string{"openid", "email", "api:read"}, "firstParty": true, "requireMfa": true, "idTokenAlg": "ES256",
		"accessTokenLifetimeSeconds": 300, "refreshTokenLifetimeSeconds": 86400, "refreshTokenIdleSeconds": 3600,
		"postLogoutRedirectUris": []string{"com.example.cli:/bye"}, "backchannelLogoutUri": "https://cli.example.com/bcl",
		"claims": map[string]string{"role": "metadata.role"},
	})
	wantOK(t, pub)
	if v, present := pub.Body["clientSecret"]; !present || v != nil {
		t.Fatalf("public client: clientSecret=%v (present %v), want null", v, present)
	}
	pc := obj(t, pub.Body, "client")
	pid := str(t, pc, "id")
	if pc["idTokenAlg"] != "ES256" || pc["firstParty"] != true || pc["requireMfa"] != true || pc["backchannelLogoutUri"] != "https://cli.example.com/bcl" ||
		joined(t, pc["redirectUris"]) != "http://127.0.0.1/callback http://[::1]/callback com.example.cli:/cb" ||
		joined(t, pc["scopes"]) != "openid email api:read" || obj(t, pc, "claims")["role"] != "metadata.role" {
		t.Fatalf("public client=%v", pc)
	}
	if row, err := ts.storedClient(ts.Project.ID, pid); err != nil || row.SecretHash != nil {
		t.Fatalf("public client row %+v %v, want no secret", row, err)
	}

	list := ts.admin("GET", clientsPath(ts, ""), nil)
	wantOK(t, list)
	items, _ := list.Body["clients"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["id"] != id || items[1].(map[string]any)["id"] != pid {
		t.Fatalf("clients=%v, want Grafana then CLI", list.Body["clients"])
	}
	if strings.Contains(string(list.Raw), secret) {
		t.Fatal("the list shows the secret")
	}
	got := ts.admin("GET", clientsPath(ts, "/"+id), nil)
	wantOK(t, got)
	if obj(t, got.Body, "client")["name"] != "Grafana" || strings.Contains(string(got.Raw), secret) {
		t.Fatalf("get=%s", got.Raw)
	}

	// A partial update changes what it names only.
	ts.Clock.Advance(time.Minute)
	up := ts.admin("PATCH", clientsPath(ts, "/"+id), map[string]any{"name": "Grafana (ops)", "claims": map[string]string{"team": "metadata.team"},
		"postLogoutRedirectUris": []string{"https://grafana.example.com/"}})
	wantOK(t, up)
	uc := obj(t, up.Body, "client")
	if uc["name"] != "Grafana (ops)" || obj(t, uc, "claims")["team"] != "metadata.team" || joined(t, uc["postLogoutRedirectUris"]) != "https://grafana.example.com/" ||
		joined(t, uc["redirectUris"]) != "https://grafana.example.com/login/generic_oauth" || uc["type"] != "confidential" ||
		uc["createdAt"] != "2026-11-22T10:00:00.000Z" || uc["updatedAt"] != "2026-11-22T10:01:00.000Z" {
		t.Fatalf("updated client=%v", uc)
	}
	if row, _ := ts.storedClient(ts.Project.ID, id); !ts.Svc.CheckClientSecret(row, secret) {
		t.Fatal("an update changed the secret")
	}
	wantOK(t, ts.admin("PATCH", clientsPath(ts, "/"+pid), map[string]any{"backchannelLogoutUri": "", "claims": map[string]string{}}))
	if pc := obj(t, ts.admin("GET", clientsPath(ts, "/"+pid), nil).Body, "client"); pc["backchannelLogoutUri"] != nil || len(obj(t, pc, "claims")) != 0 {
		t.Fatalf("cleared client=%v, want no back-channel URI and no claims", pc)
	}

	// Rotation: a new secret, once; the old one stops matching.
	rot := ts.admin("POST", clientsPath(ts, "/"+id+"/secret"), nil)
	wantOK(t, rot)
	fresh := str(t, rot.Body, "clientSecret")
	if fresh == secret || !strings.HasPrefix(fresh, "lkcs_") || obj(t, rot.Body, "client")["id"] != id {
		t.Fatalf("rotate=%s", rot.Raw)
	}
	row, _ = ts.storedClient(ts.Project.ID, id)
	if ts.Svc.CheckClientSecret(row, secret) || !ts.Svc.CheckClientSecret(row, fresh) {
		t.Fatal("after rotation the old secret still matches or the new one does not")
	}
	wantError(t, ts.admin("POST", clientsPath(ts, "/"+pid+"/secret"), map[string]any{}), 400, "VALIDATION_ERROR")
	wantError(t, ts.admin("POST", clientsPath(ts, "/"+id+"/secret"), map[string]any{"x": 1}), 400, "VALIDATION_ERROR")

	wantOK(t, ts.admin("DELETE", clientsPath(ts, "/"+id), nil))
	for _, c := range []struct{ method, path string }{
		{"GET", "/" + id}, {"PATCH", "/" + id}, {"DELETE", "/" + id}, {"POST", "/" + id + "/secret"},
	} {
		wantError(t, ts.admin(c.method, clientsPath(ts, c.path), map[string]any{}), 404, "CLIENT_NOT_FOUND")
	}
	if items, _ := ts.admin("GET", clientsPath(ts, ""), nil).Body["clients"].([]any); len(items) != 1 {
		t.Fatalf("clients after delete=%d, want 1", len(items))
	}
}

// joined returns a JSON array of strings as one space-separated string.
func joined(t testing.TB, v any) string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	var out []string
	for _, x := range list {
		out = append(out, x.(string))
	}
	return strings.Join(out, " ")
}

// TestClientsUnknown: an unknown project is 404 PROJECT_NOT_FOUND on
// every client route, an unknown client of a known project 404
// CLIENT_NOT_FOUND, and a call without the admin token 401.
func TestClientsUnknown(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	nope := "/api/v1/admin/projects/nope/clients"
	body := map[string]any{"name": "x", "type": "public", "redirectUris": []string{"http://127.0.0.1/cb"}}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", nope, body}, {"GET", nope, nil}, {"GET", nope + "/c", nil}, {"PATCH", nope + "/c", map[string]any{"name": "y"}},
		{"DELETE", nope + "/c", nil}, {"POST", nope + "/c/secret", nil},
	} {
		wantError(t, ts.admin(c.method, c.path, c.body), 404, "PROJECT_NOT_FOUND")
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/nope"}, {"PATCH", "/nope"}, {"DELETE", "/nope"}, {"POST", "/nope/secret"},
	} {
		r := ts.admin(c.method, clientsPath(ts, c.path), map[string]any{})
		wantError(t, r, 404, "CLIENT_NOT_FOUND")
		if len(r.Body) != 3 {
			t.Fatalf("%s %s: body %s, want success, error and code only", c.method, c.path, r.Raw)
		}
	}
	wantError(t, ts.do("POST", clientsPath(ts, ""), "", body), 401, "UNAUTHORIZED")
	wantError(t, ts.do("GET", clientsPath(ts, ""), "", nil), 401, "UNAUTHORIZED")
}

// TestClientsValidation: each refused value is 400 VALIDATION_ERROR with
// a message naming what is wrong, and nothing is stored or changed.
func TestClientsValidation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	base := func(kv ...any) map[string]any {
		m := map[string]any{"name": "App", "type": "confidential", "redirectUris": []string{"https://app.example.com/cb"}}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	uris := func(u ...string) []string { return append([]string{}, u...) }
	cases := []struct {
		name string
		body map[string]any
		want string
	}{
		{"no name", base("name", nil), "name is required"},
		{"blank name", base("name", "  "), "name must be 1 to 100"},
		{"no type", base("type", nil), "type is required"},
		{"unknown type", base("type", "secret"), `type must be "confidential" or "public"`},
		{"no redirect URI", base("redirectUris", nil), "at least one redirect URI"},
		{"empty redirect URIs", base("redirectUris", uris()), "at least one redirect URI"},
		{"relative", base("redirectUris", uris("/cb")), "not an absolute URI"},
		{"fragment", base("redirectUris", uris("https://app.example.com/cb#x")), "fragment"},
		{"empty fragment", base("redirectUris", uris("https://app.example.com/cb#")), "fragment"},
		{"user info", base("redirectUris", uris("https://u:p@app.example.com/cb")), "user info"},
		{"plain http", base("redirectUris", uris("http://app.example.com/cb")), "http is allowed only on 127.0.0.1 or [::1]"},
		{"http private address", base("redirectUris", uris("http://10.0.0.1/cb")), "http is allowed only on"},
		{"localhost", base("redirectUris", uris("http://localhost:8080/cb")), "instead of localhost"},
		{"https without host", base("redirectUris", uris("https:///cb")), "has no host"},
		{"space", base("redirectUris", uris("https://app.example.com/a b")), "without spaces"},
		{"custom scheme for a confidential client", base("redirectUris", uris("com.example.app:/cb")), "custom schemes are for public"},
		{"javascript", base("type", "public", "redirectUris", uris("javascript:alert(1)")), "cannot be a redirect URI"},
		{"custom scheme of one word", base("type", "public", "redirectUris", uris("x-javascript:alert(1)")), "reversed domain name"},
		{"custom scheme without a domain", base("type", "public", "redirectUris", uris("myapp:/cb")), "reversed domain name"},
		{"too many URIs", base("redirectUris", make([]string, 21)), "at most 20 URIs"},
		{"bad post-logout URI", base("postLogoutRedirectUris", uris("http://example.com/")), "postLogoutRedirectUris"},
		{"bad back-channel URI", base("backchannelLogoutUri", "ftp://example.com/"), "backchannelLogoutUri"},
		{"no grant", base("grantTypes", uris()), "at least one grant type"},
		{"unknown grant", base("grantTypes", uris("implicit")), `unknown grant type "implicit"`},
		{"refresh alone", base("grantTypes", uris("refresh_token")), "refresh_token needs"},
		{"client credentials for a public client", base("type", "public", "grantTypes", uris("authorization_code", "client_credentials")), "confidential clients only"},
		{"scopes without openid", base("scopes", uris("email")), "must include openid"},
		{"scope with a space", base("scopes", uris("openid", "a b")), "is not a scope"},
		{"alg", base("idTokenAlg", "HS256"), `idTokenAlg must be "RS256" or "ES256"`},
		{"access token too short", base("accessTokenLifetimeSeconds", 299), "accessTokenLifetimeSeconds must be between 300 and 86400"},
		{"access token too long", base("accessTokenLifetimeSeconds", 86401), "accessTokenLifetimeSeconds must be between"},
		{"refresh too long", base("refreshTokenLifetimeSeconds", 7776001), "refreshTokenLifetimeSeconds must be between"},
		{"idle too short", base("refreshTokenIdleSeconds", 10), "refreshTokenIdleSeconds must be between"},
		{"idle past lifetime", base("refreshTokenLifetimeSeconds", 3600, "refreshTokenIdleSeconds", 7200), "must not exceed refreshTokenLifetimeSeconds"},
		{"reserved claim", base("claims", map[string]string{"sub": "metadata.id"}), `"sub" is set by the provider`},
		{"claim source", base("claims", map[string]string{"role": "profile.role"}), `must be "metadata.<key>"`},
		{"claim name", base("claims", map[string]string{"1role": "metadata.role"}), "is not a claim name"},
		{"unknown field", base("redirect_uris", uris("https://x")), `Unknown field "redirect_uris"`},
		{"wrong type", base("firstParty", "yes"), "firstParty has the wrong type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.admin("POST", clientsPath(ts, ""), c.body)
			wantError(t, r, 400, "VALIDATION_ERROR")
			if msg := str(t, r.Body, "error"); !strings.Contains(msg, c.want) {
				t.Fatalf("error=%q, want it to say %q", msg, c.want)
			}
		})
	}
	if items, _ := ts.admin("GET", clientsPath(ts, ""), nil).Body["clients"].([]any); len(items) != 0 {
		t.Fatalf("%d clients stored by refused calls", len(items))
	}

	// An update is checked as a whole; a refused one changes nothing.
	r := ts.admin("POST", clientsPath(ts, ""), base("type", "public", "refreshTokenLifetimeSeconds", 7200, "refreshTokenIdleSeconds", 3600))
	wantOK(t, r)
	id := str(t, obj(t, r.Body, "client"), "id")
	before := ts.admin("GET", clientsPath(ts, "/"+id), nil).Raw
	for _, c := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"type", map[string]any{"type": "confidential"}, "type cannot be changed"},
		{"idle past the stored lifetime", map[string]any{"refreshTokenIdleSeconds": 7201}, "must not exceed"},
		{"lifetime under the stored idle time", map[string]any{"refreshTokenLifetimeSeconds": 3599}, "must not exceed"},
		{"client credentials", map[string]any{"grantTypes": uris("client_credentials")}, "confidential clients only"},
		{"no redirect URI left", map[string]any{"redirectUris": uris()}, "at least one redirect URI"},
		{"a bad name with a good field", map[string]any{"firstParty": true, "name": ""}, "name must be"},
	} {
		r := ts.admin("PATCH", clientsPath(ts, "/"+id), c.body)
		wantError(t, r, 400, "VALIDATION_ERROR")
		if msg := str(t, r.Body, "error"); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error=%q, want it to say %q", c.name, msg, c.want)
		}
	}
	if after := ts.admin("GET", clientsPath(ts, "/"+id), nil).Raw; string(after) != string(before) {
		t.Fatalf("refused updates changed the client:\n%s\nwas\n%s", after, before)
	}
	// The same type is no change; a client without the code grant
	// needs no redirect URI.
	wantOK(t, ts.admin("PATCH", clientsPath(ts, "/"+id), map[string]any{"type": "public",
		"grantTypes": uris("urn:ietf:params:oauth:grant-type:device_code"), "redirectUris": uris()}))
}

// TestClientsGoWithTheirProject: deleting a project deletes its clients
// and its provider's signing keys; another project's stay.
func TestClientsGoWithTheirProject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	other := obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"}).Body, "project")
	otherID := str(t, other, "id")
	body := map[string]any{"name": "App", "type": "public", "redirectUris": []string{"http://127.0.0.1/cb"}}
	var ids []string
	for _, p := range []string{ts.Project.ID, otherID} {
		r := ts.admin("POST", "/api/v1/admin/projects/"+p+"/clients", body)
		wantOK(t, r)
		ids = append(ids, str(t, obj(t, r.Body, "client"), "id"))
		if _, err := ts.Svc.OIDCKeys(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+ts.Project.ID, nil))
	err := ts.DB.View(ctx, func(tx store.Tx) error {
		for i, p := range []string{ts.Project.ID, otherID} {
			clients, err := tx.OIDCClients(p)
			if err != nil {
				return err
			}
			keys, err := tx.OIDCKeys(p)
			if err != nil {
				return err
			}
			want := map[bool]int{true: 0, false: 1}[i == 0]
			if len(clients) != want || len(keys) != 2*want {
				t.Errorf("project %d: %d clients and %d keys, want %d and %d", i, len(clients), len(keys), want, 2*want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/clients/"+ids[0], nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
	wantOK(t, ts.admin("GET", "/api/v1/admin/projects/"+otherID+"/clients/"+ids[1], nil))
}

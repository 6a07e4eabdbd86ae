package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"latchkey/store"
)

// TestOIDCClientDeleteRevokes: deleting a client over the admin API
// ends what it was issued, on the store under test: its refresh token
// and access token are refused (the token endpoint cannot authenticate
// a deleted client, userinfo answers 401), the user's consents no
// longer list it, and no event is emitted; once a client row with its
// id is stored again (a row put back: ids are random, so nothing else
// makes one), its refresh token is invalid_grant, introspection calls
// it inactive and userinfo still refuses its access token, since the
// deletion revoked the grant. Another client's consent and tokens
// work on.
func TestOIDCClientDeleteRevokes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rp := ts.newRP(pid, map[string]any{"grantTypes": refreshGrants})
	other := ts.newRP(pid, map[string]any{"grantTypes": refreshGrants, "name": "Other App"})
	for _, c := range []*oidcRP{rp, other} {
		c.config.Scopes = append(c.config.Scopes, "offline_access")
	}
	tok, _ := rp.signedIn("ada@example.com")
	ts.Clock.Advance(2 * time.Minute) // past the code's send throttle
	tokO, _ := other.signedIn("ada@example.com")
	uid := ts.userByEmail("ada@example.com").ID
	consents := func() []string {
		t.Helper()
		r := ts.admin("GET", "/api/v1/admin/users/"+uid+"/consents", nil)
		wantOK(t, r)
		var ids []string
		for _, c := range r.Body["consents"].([]any) {
			ids = append(ids, c.(map[string]any)["clientId"].(string))
		}
		return ids
	}
	if got := consents(); len(got) != 2 {
		t.Fatalf("consents before the deletion: %v, want both clients", got)
	}
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusOK {
		t.Fatalf("userinfo before the deletion: %d %s", r.Status, r.Raw)
	}
	row, err := ts.storedClient(pid, rp.id)
	if err != nil {
		t.Fatal(err)
	}
	events := len(ts.outbox())

	wantOK(t, ts.admin("DELETE", clientsPath(ts, "/"+rp.id), nil))
	wantOAuthError(t, rp.refresh(tok.RefreshToken), http.StatusUnauthorized, "invalid_client")
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("userinfo with the deleted client's access token: %d %s", r.Status, r.Raw)
	}
	if got := consents(); len(got) != 1 || got[0] != other.id {
		t.Fatalf("consents after the deletion: %v, want %s only", got, other.id)
	}
	if n := len(ts.outbox()); n != events {
		t.Fatalf("the deletion emitted %v", ts.outbox()[events:])
	}

	// The client's row put back, secret and all.
	if err := ts.DB.Update(ctx, func(tx store.Tx) error { return tx.PutOIDCClient(row) }); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, rp.refresh(tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
	for what, token := range map[string]string{"refresh token": tok.RefreshToken, "access token": tok.AccessToken} {
		if r := rp.introspect(token); r.Status != http.StatusOK || r.Body["active"] != false {
			t.Fatalf("introspection of the %s: %d %s, want inactive", what, r.Status, r.Raw)
		}
	}
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("userinfo once the row is back: %d %s", r.Status, r.Raw)
	}

	// The other client's work on.
	if r := other.userinfo(tokO.AccessToken); r.Status != http.StatusOK {
		t.Fatalf("the other client's userinfo: %d %s", r.Status, r.Raw)
	}
	if r := other.refresh(tokO.RefreshToken); r.Status != http.StatusOK || str(t, r.Body, "refresh_token") == "" {
		t.Fatalf("the other client's refresh: %d %s", r.Status, r.Raw)
	}
}

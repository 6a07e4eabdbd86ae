package auth_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// TestClientUseCases: a client's life without HTTP: created with the
// defaults and a secret checked by its keyed hash, read, changed in
// part, its secret rotated, deleted; the errors of each for unknown ids
// and refused values, which change nothing.
func TestClientUseCases(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	in := auth.ClientInput{Name: ptr("  Gitea "), Type: ptr(auth.ClientConfidential),
		RedirectURIs: &[]string{"https://git.example.com/user/oauth2/latchkey/callback", "https://git.example.com/user/oauth2/latchkey/callback"}}
	c, secret, err := ts.CreateClient(ctx, pid, in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Gitea" || len(c.RedirectURIs) != 1 || c.Issuer != "https://auth.example.com/oidc/"+pid ||
		strings.Join(c.GrantTypes, " ") != auth.GrantAuthorizationCode || strings.Join(c.Scopes, " ") != strings.Join(auth.ProviderScopes, " ") ||
		c.IDTokenAlg != auth.AlgRS256 || c.AccessTokenLifetimeSeconds != 3600 || c.RefreshTokenLifetimeSeconds != 30*86400 ||
		c.RefreshTokenIdleSeconds != 7*86400 || c.BackchannelLogoutURI != nil || c.Claims == nil {
		t.Fatalf("created %+v", c)
	}
	var row *store.OIDCClient
	err = ts.db.View(ctx, func(tx store.Tx) (err error) {
		row, err = tx.OIDCClient(pid, c.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ts.CheckClientSecret(row, secret) || ts.CheckClientSecret(row, "") || ts.CheckClientSecret(row, strings.ToUpper(secret)) {
		t.Fatal("CheckClientSecret does not tell the secret apart")
	}

	ts.clock.Advance(time.Hour)
	up, err := ts.UpdateClient(ctx, pid, c.ID, auth.ClientInput{RequireMFA: ptr(true), IDTokenAlg: ptr(auth.AlgES256)})
	if err != nil {
		t.Fatal(err)
	}
	if !up.RequireMFA || up.IDTokenAlg != auth.AlgES256 || up.Name != "Gitea" || up.UpdatedAt == c.UpdatedAt || up.CreatedAt != c.CreatedAt {
		t.Fatalf("updated %+v", up)
	}
	if got, err := ts.Client(ctx, pid, c.ID); err != nil || got.IDTokenAlg != auth.AlgES256 {
		t.Fatalf("Client=%+v %v", got, err)
	}
	_, fresh, err := ts.RotateClientSecret(ctx, pid, c.ID)
	if err != nil || fresh == secret {
		t.Fatalf("rotate: %q %v", fresh, err)
	}

	pub, none, err := ts.CreateClient(ctx, pid, auth.ClientInput{Name: ptr("SPA"), Type: ptr(auth.ClientPublic),
		RedirectURIs: &[]string{"https://spa.example.com/cb"}})
	if err != nil || none != "" {
		t.Fatalf("public client: secret %q, %v", none, err)
	}
	if _, _, err := ts.RotateClientSecret(ctx, pid, pub.ID); !errors.Is(err, auth.ErrValidation) {
		t.Fatalf("rotating a public client's secret: %v, want VALIDATION_ERROR", err)
	}
	if list, err := ts.Clients(ctx, pid); err != nil || len(list) != 2 || list[0].ID != c.ID {
		t.Fatalf("Clients=%+v %v", list, err)
	}

	for name, err := range map[string]error{
		"get":                    second(ts.Client(ctx, pid, "nope")),
		"update":                 second(ts.UpdateClient(ctx, pid, "nope", auth.ClientInput{})),
		"delete":                 ts.DeleteClient(ctx, pid, "nope"),
		"rotate":                 third(ts.RotateClientSecret(ctx, pid, "nope")),
		"other project's client": second(ts.Client(ctx, "nope", c.ID)),
	} {
		want := auth.ErrClientNotFound
		if strings.HasPrefix(name, "other") {
			want = auth.ErrProjectNotFound
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want.Code)
		}
	}
	if _, _, err := ts.CreateClient(ctx, "nope", in); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Errorf("create in an unknown project: %v", err)
	}
	if _, err := ts.Clients(ctx, "nope"); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Errorf("list an unknown project: %v", err)
	}

	if err := ts.DeleteClient(ctx, pid, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Client(ctx, pid, c.ID); !errors.Is(err, auth.ErrClientNotFound) {
		t.Fatalf("deleted client: %v", err)
	}
}

// second and third return the error of a call's results.
func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

// TestClientsPerProjectCap: a project holds at most
// MaxClientsPerProject clients; one more is refused and not stored.
func TestClientsPerProjectCap(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	err := ts.db.Update(ctx, func(tx store.Tx) error {
		for i := range auth.MaxClientsPerProject {
			if err := tx.PutOIDCClient(&store.OIDCClient{ProjectID: pid, ID: fmt.Sprintf("c%04d", i), Name: "x", Type: auth.ClientPublic}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ts.CreateClient(ctx, pid, auth.ClientInput{Name: ptr("one more"), Type: ptr(auth.ClientPublic),
		RedirectURIs: &[]string{"http://127.0.0.1/cb"}})
	if !errors.Is(err, auth.ErrValidation) || !strings.Contains(err.Error(), "at most 1000 clients") {
		t.Fatalf("the 1001st client: %v, want VALIDATION_ERROR", err)
	}
	if list, err := ts.Clients(ctx, pid); err != nil || len(list) != auth.MaxClientsPerProject {
		t.Fatalf("%d clients, %v", len(list), err)
	}
}

package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// OIDCClients tests the clients of the projects' OpenID providers
// (store.OIDCClients).
func (s Suite) OIDCClients(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.oidcClientsRoundTrip}})
}

// oidcClientsRoundTrip: clients round-trip exactly (a client with every
// field set, and one with none but its key: nil and empty lists and
// maps alike), are found by (project, id) only, list per project in id
// byte order (never nil), are replaced whole and deleted by key, and go
// with their project.
func (s Suite) oidcClientsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC)
	full := &store.OIDCClient{ProjectID: "p", ID: "c-full", Name: "Grafana — ops", Type: "confidential",
		SecretHash: []byte("hash\x00\xff"), RedirectURIs: []string{"https://grafana.example.com/login/generic_oauth", "http://127.0.0.1/cb"},
		PostLogoutRedirectURIs: []string{"https://grafana.example.com/"}, BackchannelLogoutURI: "https://grafana.example.com/bcl",
		GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"groups", "api:read"},
		FirstParty: true, RequireMFA: true, IDTokenAlg: "ES256", AccessTokenLifetimeSeconds: 300,
		RefreshTokenLifetimeSeconds: 2592000, RefreshTokenIdleSeconds: 604800,
		Claims: map[string]string{"role": "metadata.role", "ünï": "metadata.x"}, CreatedAt: at, UpdatedAt: at.Add(time.Second),
		Registered: true}
	complete(t, full)
	bare := &store.OIDCClient{ProjectID: "p", ID: "c-bare"}
	update(t, db, func(tx store.Tx) error {
		for _, id := range []string{"p", "p2", "pp"} {
			if err := tx.PutProject(&store.Project{ID: id, Name: id, CreatedAt: at}); err != nil {
				return err
			}
		}
		first := *full
		first.Name, first.Claims, first.RedirectURIs = "before", map[string]string{"gone": "metadata.gone"}, []string{"https://x"}
		for _, c := range []*store.OIDCClient{&first, bare, {ProjectID: "p", ID: "c-a", Name: "a"}, {ProjectID: "p2", ID: "c-full", Name: "p2's"},
			{ProjectID: "pp", ID: "c-z", Name: "z"}, full} {
			if err := tx.PutOIDCClient(c); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		got, err := tx.OIDCClient("p", "c-full")
		if err != nil {
			return err
		}
		if err := diff("replaced client", got, full); err != nil {
			return err
		}
		if got, err = tx.OIDCClient("p", "c-bare"); err != nil {
			return err
		}
		if err := diff("bare client", got, bare); err != nil {
			return err
		}
		if got, err = tx.OIDCClient("p2", "c-full"); err != nil || got.Name != "p2's" {
			return fmt.Errorf("OIDCClient(p2, c-full)=%+v %v, want p2's own", got, err)
		}
		for _, k := range [][2]string{{"p", "c-ful"}, {"pp", "c-full"}, {"p", "C-FULL"}, {"nope", "c-a"}} {
			if _, err := tx.OIDCClient(k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("OIDCClient(%q)=%v, want ErrNotFound", k, err)
			}
		}
		list, err := tx.OIDCClients("p")
		if err != nil {
			return err
		}
		var ids []string
		for _, c := range list {
			ids = append(ids, c.ID)
		}
		if want := "c-a c-bare c-full"; strings.Join(ids, " ") != want {
			return fmt.Errorf("OIDCClients(p)=%s, want %s", strings.Join(ids, " "), want)
		}
		if err := diff("listed client", list[2], full); err != nil {
			return err
		}
		if none, err := tx.OIDCClients("nope"); err != nil || none == nil || len(none) != 0 {
			return fmt.Errorf("OIDCClients(nope)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OIDCClient("p", "c-full")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OIDCClient":            wantNotFound(tx.OIDCClient(bad, "c-full")),
			"OIDCClient/id":         wantNotFound(tx.OIDCClient("p", bad)),
			"OIDCClients":           wantNone(tx.OIDCClients(bad)),
			"DeleteOIDCClient":      tx.DeleteOIDCClient(bad, "c-full"),
			"DeleteOIDCClient/id":   tx.DeleteOIDCClient("p", bad),
			"DeleteOIDCClient/both": tx.DeleteOIDCClient(bad, bad),
		}
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteOIDCClient("p", "c-a"); err != nil {
			return err
		}
		if err := tx.DeleteOIDCClient("p", "c-a"); err != nil {
			return fmt.Errorf("deleting a deleted client: %w", err)
		}
		if _, err := tx.OIDCClient("p", "c-a"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted client: %v", err)
		}
		if _, err := tx.OIDCClient("p", "c-full"); err != nil {
			return fmt.Errorf("the other client after a delete: %w", err)
		}
		_, err := tx.DeleteProject("p")
		return err
	})
	view(t, db, func(tx store.Tx) error {
		for pid, want := range map[string]int{"p": 0, "p2": 1, "pp": 1} {
			if list, err := tx.OIDCClients(pid); err != nil || len(list) != want {
				return fmt.Errorf("OIDCClients(%s) after DeleteProject(p)=%d %v, want %d", pid, len(list), err, want)
			}
		}
		return nil
	})
}

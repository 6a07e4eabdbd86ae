package store_test

import (
	"reflect"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestProjectProviders: a project's OAuth providers round-trip whole on
// either backend (LinkByEmail nil, true and false alike), and a project
// without any reads back with nil.
func TestProjectProviders(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	at := time.Date(2026, 11, 24, 15, 0, 0, 123456789, time.UTC)
	yes, no := true, false
	p := &store.Project{ID: "p1", Name: "shop", CreatedAt: at, Providers: []store.Provider{
		{ID: "pr1", Name: "google", Type: "google", ClientID: "cid", Secret: []byte{0, 1, 2, 255}, Issuer: "https://accounts.google.com", Scopes: []string{"openid", "email"}, CreatedAt: at, ResponseMode: "form_post"},
		{ID: "pr2", Name: "github", Type: "github", ClientID: "gh", Secret: []byte("sealed"), CreatedAt: at, LinkByEmail: &no},
		{ID: "pr3", Name: "corp", Type: "oidc", ClientID: "c", Secret: []byte("sealed"), Issuer: "https://idp.example", CreatedAt: at, LinkByEmail: &yes},
	}}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.PutProject(p) }); err != nil {
		t.Fatal(err)
	}
	read := func() *store.Project {
		var got *store.Project
		if err := db.View(ctx, func(tx store.Tx) (err error) { got, err = tx.Project("p1"); return err }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := read()
	for i := range got.Providers {
		if !got.Providers[i].CreatedAt.Equal(at) {
			t.Fatalf("provider %d created %v, want %v", i, got.Providers[i].CreatedAt, at)
		}
		got.Providers[i].CreatedAt = at
	}
	if !reflect.DeepEqual(got.Providers, p.Providers) {
		t.Fatalf("providers = %+v, want %+v", got.Providers, p.Providers)
	}
	p.Providers = nil
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.PutProject(p) }); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Providers != nil {
		t.Fatalf("providers = %+v, want nil", got.Providers)
	}
}

package auth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"sync"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
	"latchkey/store/storetest"
)

// oidcKeyRows reads projectID's provider keys from the store.
func (ts *testService) oidcKeyRows(projectID string) []*store.OIDCKey {
	ts.t.Helper()
	var keys []*store.OIDCKey
	err := ts.db.View(ctx, func(tx store.Tx) (err error) {
		keys, err = tx.OIDCKeys(projectID)
		return err
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return keys
}

// TestOIDCKeysOnFirstUse: a project's first use of its provider makes
// one active RS256 and one ES256 key, sealed in the store under the
// project and kid, apart from its session-token key; later calls, and a
// service started anew, use the same keys; an unknown project is
// PROJECT_NOT_FOUND and gets none.
func TestOIDCKeysOnFirstUse(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	if n := len(ts.oidcKeyRows(pid)); n != 0 {
		t.Fatalf("%d provider keys before first use, want none", n)
	}
	set, err := ts.OIDCKeys(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	rs, es := set.Active[auth.AlgRS256], set.Active[auth.AlgES256]
	if rs == nil || es == nil || len(set.Active) != 2 {
		t.Fatalf("active keys %v, want RS256 and ES256", set.Active)
	}
	if k, ok := rs.Private.(*rsa.PrivateKey); !ok || k.N.BitLen() != 2048 {
		t.Fatalf("RS256 key is a %T", rs.Private)
	}
	if k, ok := es.Private.(*ecdsa.PrivateKey); !ok || k.Curve.Params().Name != "P-256" {
		t.Fatalf("ES256 key is a %T", es.Private)
	}
	if len(set.Published) != 2 || set.Published[0].ID != rs.ID || set.Published[1].ID != es.ID {
		t.Fatalf("published %+v, want the RS256 then the ES256 key", set.Published)
	}
	for i, k := range []*auth.OIDCSigningKey{rs, es} {
		if !set.Published[i].Key.(interface{ Equal(crypto.PublicKey) bool }).Equal(k.Private.Public()) {
			t.Errorf("published %s key is not the signing key's public half", k.Alg)
		}
	}
	if rs.ID == ts.project.SigningKeyID || es.ID == ts.project.SigningKeyID || rs.ID == es.ID {
		t.Fatalf("kids %s %s, session key %s: want three different keys", rs.ID, es.ID, ts.project.SigningKeyID)
	}

	rows := ts.oidcKeyRows(pid)
	if len(rows) != 2 {
		t.Fatalf("%d keys stored, want 2", len(rows))
	}
	for _, r := range rows {
		if !r.RetiredAt.IsZero() || !r.CreatedAt.Equal(start) {
			t.Errorf("key %s: created %v retired %v, want created now and active", r.ID, r.CreatedAt, r.RetiredAt)
		}
		if _, err := ts.keys.Open(r.PrivateKey, []byte("oidc-key:"+pid+"/"+r.ID)); err != nil {
			t.Errorf("key %s does not open under its project and kid: %v", r.ID, err)
		}
		if _, err := ts.keys.Open(r.PrivateKey, []byte("oidc-key:other/"+r.ID)); err == nil {
			t.Errorf("key %s opens under another project", r.ID)
		}
	}

	again, err := ts.OIDCKeys(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if again.Active[auth.AlgRS256] != rs || again.Active[auth.AlgES256] != es {
		t.Fatal("a second call did not use the keys decrypted by the first")
	}
	other, err := auth.New(ts.db, ts.keys, auth.Config{BaseURL: "https://auth.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	restarted, err := other.OIDCKeys(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if restarted.Active[auth.AlgRS256].ID != rs.ID || restarted.Active[auth.AlgES256].ID != es.ID {
		t.Fatal("another service over the store made other keys")
	}
	if n := len(ts.oidcKeyRows(pid)); n != 2 {
		t.Fatalf("%d keys stored after three uses, want 2", n)
	}

	if _, err := ts.OIDCKeys(ctx, "nope"); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Fatalf("unknown project: %v, want PROJECT_NOT_FOUND", err)
	}
	if n := len(ts.oidcKeyRows("nope")); n != 0 {
		t.Fatalf("%d keys stored for an unknown project", n)
	}

	// Deleting the project deletes its keys; the kids it had are not
	// used again by anyone.
	if err := ts.DeleteProject(ctx, pid); err != nil {
		t.Fatal(err)
	}
	if n := len(ts.oidcKeyRows(pid)); n != 0 {
		t.Fatalf("%d keys stored after the project's deletion", n)
	}
	if _, err := ts.OIDCKeys(ctx, pid); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Fatalf("deleted project: %v, want PROJECT_NOT_FOUND", err)
	}
}

// TestOIDCKeysRetiredPublished: a retired key no longer signs and a new
// active key of its algorithm is made; the retired key stays in the
// JWKS for OIDCKeyPublishedFor after its retirement, then leaves it.
func TestOIDCKeysRetiredPublished(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	first, err := ts.OIDCKeys(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	old := first.Active[auth.AlgES256]
	retired := ts.clock.Now()
	err = ts.db.Update(ctx, func(tx store.Tx) error { return tx.RetireOIDCKey(pid, old.ID, retired) })
	if err != nil {
		t.Fatal(err)
	}
	// The service keeps the key set for a minute at most: a key retired
	// in the store behind its back is seen after that (on PostgreSQL
	// sooner: the store tells of the project's change).
	ts.clock.Advance(time.Minute)
	set, err := ts.OIDCKeys(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	es := set.Active[auth.AlgES256]
	if es == nil || es.ID == old.ID || set.Active[auth.AlgRS256].ID != first.Active[auth.AlgRS256].ID {
		t.Fatalf("active %v: want the same RS256 key and a new ES256 one", set.Active)
	}
	ids := func(set *auth.OIDCKeySet) []string {
		var out []string
		for _, k := range set.Published {
			out = append(out, k.ID)
		}
		return out
	}
	if got := ids(set); len(got) != 3 || got[2] != old.ID || set.Published[2].Alg != auth.AlgES256 {
		t.Fatalf("published %v, want the two active keys then the retired %s", got, old.ID)
	}
	ts.clock.Set(retired.Add(auth.OIDCKeyPublishedFor - time.Second))
	if set, err = ts.OIDCKeys(ctx, pid); err != nil || len(set.Published) != 3 {
		t.Fatalf("published %v %v just before the end of its window, want 3 keys", ids(set), err)
	}
	ts.clock.Advance(time.Second)
	if set, err = ts.OIDCKeys(ctx, pid); err != nil || len(set.Published) != 2 {
		t.Fatalf("published %v %v once its window ended, want the 2 active keys", ids(set), err)
	}
}

// TestOIDCKeysRace: first uses of a project's provider at once, by
// goroutines of one service and by two services over one store (two
// replicas on PostgreSQL), make one key of each algorithm, which every
// caller gets.
func TestOIDCKeysRace(t *testing.T) {
	t.Parallel()
	dsn := storetest.New(t)
	open := func() store.DB {
		db, _, err := store.Open(ctx, dsn, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	first := open()
	ts := newTestServiceOver(t, first)
	pid := ts.project.ID
	second := first // one process owns a data file
	if storetest.Backend(t) == storetest.Postgres {
		// Another replica: its own connection pool and caches.
		second = open()
	}
	other, err := auth.New(second, ts.keys, auth.Config{BaseURL: "https://auth.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const n = 8
	got := make([]*auth.OIDCKeySet, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i := range n {
		svc := ts.Service
		if i%2 == 1 {
			svc = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			got[i], errs[i] = svc.OIDCKeys(ctx, pid)
		}()
	}
	close(begin)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	rows := ts.oidcKeyRows(pid)
	if len(rows) != 2 {
		t.Fatalf("%d keys stored, want one per algorithm", len(rows))
	}
	for i, set := range got {
		for _, alg := range []string{auth.AlgRS256, auth.AlgES256} {
			want := ""
			for _, r := range rows {
				if r.Alg == alg {
					want = r.ID
				}
			}
			if set.Active[alg].ID != want {
				t.Errorf("caller %d got %s key %s, want the stored %s", i, alg, set.Active[alg].ID, want)
			}
		}
	}
}

// TestOIDCStorageKeys: the provider storage of a project signs with its
// active RS256 key and publishes its keys, algorithms RS256 then
// ES256; a project that does not exist has none; client keys (the JWT
// bearer grant, private_key_jwt) are refused.
func TestOIDCStorageKeys(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	st := ts.OIDCStorage(ts.project.ID)
	sk, err := st.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set, err := ts.OIDCKeys(ctx, ts.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sk.ID() != set.Active[auth.AlgRS256].ID || sk.SignatureAlgorithm() != "RS256" || sk.Key() != set.Active[auth.AlgRS256].Private {
		t.Fatalf("signing key %s %s, want the active RS256 key", sk.ID(), sk.SignatureAlgorithm())
	}
	keys, err := st.KeySet(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("KeySet: %d keys, %v", len(keys), err)
	}
	for i, k := range keys {
		if k.ID() != set.Published[i].ID || string(k.Algorithm()) != set.Published[i].Alg || k.Use() != "sig" || k.Key() != set.Published[i].Key {
			t.Errorf("key %d: %s %s %s", i, k.ID(), k.Algorithm(), k.Use())
		}
	}
	if algs, err := st.SignatureAlgorithms(ctx); err != nil || len(algs) != 2 || algs[0] != "RS256" || algs[1] != "ES256" {
		t.Fatalf("SignatureAlgorithms = %v, %v", algs, err)
	}
	if err := st.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	if _, err := st.GetKeyByIDAndClientID(ctx, "kid", "client"); err == nil {
		t.Fatal("a client key was accepted")
	}
	if _, err := st.ValidateJWTProfileScopes(ctx, "user", []string{"openid"}); err == nil {
		t.Fatal("the JWT bearer grant's scopes were accepted")
	}
	nope := ts.OIDCStorage("nope")
	if _, err := nope.KeySet(ctx); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Fatalf("KeySet of an unknown project: %v", err)
	}
	if _, err := nope.SigningKey(ctx); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Fatalf("SigningKey of an unknown project: %v", err)
	}
}

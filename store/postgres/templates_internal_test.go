package postgres

import (
	"errors"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
)

// TestTemplateCache: a replica answers Template from the project's
// templates as it read them: its own changes show at once, another
// replica's once templateTTL has passed on its clock, and a rolled-back
// change never.
func TestTemplateCache(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a, b := openReplica(t, u, store.Options{}), openReplica(t, u, store.Options{})
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	a.templates = &templates{now: clock.Now}
	now := time.Now().UTC()
	put := func(db store.DB, subject string) {
		t.Helper()
		mustUpdate(t, db, func(tx store.Tx) error {
			return tx.PutTemplate(&store.Template{ProjectID: "p", Kind: "otp", Locale: "fr", Subject: subject, Text: "t", HTML: "h", UpdatedAt: now})
		})
	}
	subject := func(db store.DB) string {
		t.Helper()
		var s string
		err := db.View(bg, func(tx store.Tx) error {
			tpl, err := tx.Template("p", "otp", "fr")
			if errors.Is(err, store.ErrNotFound) {
				s = "(none)"
				return nil
			} else if err != nil {
				return err
			}
			s = tpl.Subject
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mustUpdate(t, a, func(tx store.Tx) error { return tx.PutProject(&store.Project{ID: "p", Name: "p", CreatedAt: now}) })
	if got := subject(a); got != "(none)" {
		t.Fatalf("before any template: %q", got)
	}
	put(a, "one")
	if got := subject(a); got != "one" {
		t.Fatalf("after its own change: %q, want one", got)
	}
	put(b, "two")
	if got := subject(a); got != "one" {
		t.Fatalf("another replica's change before the TTL: %q, want the cached one", got)
	}
	clock.Advance(templateTTL)
	if got := subject(a); got != "two" {
		t.Fatalf("another replica's change after the TTL: %q, want two", got)
	}
	// A change rolled back is never kept, even though the transaction
	// read it back.
	rollback := errors.New("roll back")
	err := a.Update(bg, func(tx store.Tx) error {
		if err := tx.PutTemplate(&store.Template{ProjectID: "p", Kind: "otp", Locale: "fr", Subject: "phantom", Text: "t", HTML: "h", UpdatedAt: now}); err != nil {
			return err
		}
		if tpl, err := tx.Template("p", "otp", "fr"); err != nil || tpl.Subject != "phantom" {
			t.Errorf("own uncommitted change: %v %v", tpl, err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if got := subject(a); got != "two" {
		t.Fatalf("after a rolled-back change: %q, want two", got)
	}
	mustUpdate(t, a, func(tx store.Tx) error { return tx.DeleteTemplate("p", "otp", "fr") })
	if got := subject(a); got != "(none)" {
		t.Fatalf("after its own delete: %q", got)
	}
}

// A transaction whose snapshot predates a template write committed on
// this replica does not put its (old) read into the replica's cache.
func TestTemplateCacheOldSnapshot(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	put := func(subject string) {
		mustUpdate(t, db, func(tx store.Tx) error {
			return tx.PutTemplate(&store.Template{ProjectID: "p", Kind: "otp", Locale: "en", Subject: subject, Text: "t", UpdatedAt: time.Now()})
		})
	}
	put("old")
	began, read, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.View(bg, func(tx store.Tx) error {
			if _, err := tx.Projects(); err != nil { // takes the snapshot
				return err
			}
			close(began)
			<-read
			_, err := tx.Template("p", "otp", "en")
			return err
		})
	}()
	<-began
	put("new")
	close(read)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.View(bg, func(tx store.Tx) error {
		tm, err := tx.Template("p", "otp", "en")
		if err == nil {
			got = tm.Subject
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got != "new" {
		t.Errorf("Template after this replica's committed write: %q, want \"new\"", got)
	}
}

// TestTemplateChangesFeed: a template written or deleted writes a
// ChangeTemplates row for its project to the feed, in its transaction
// (the service's caches of page texts on every replica drop it); a
// rolled-back write writes none.
func TestTemplateChangesFeed(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	db := openReplica(t, u, store.Options{})
	now := time.Now().UTC()
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutProject(&store.Project{ID: "pf", Name: "pf", CreatedAt: now}) })
	page := &store.Template{ProjectID: "pf", Kind: store.TemplateKindPage, Locale: "pt", Text: `{"sign_in_title":"Entrar"}`, UpdatedAt: now}
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutTemplate(page) })
	if n := feedRows(t, db, store.ChangeTemplates, "pf"); n != 1 {
		t.Fatalf("after a put: %d feed rows, want 1", n)
	}
	errBack := errors.New("roll back")
	if err := db.Update(bg, func(tx store.Tx) error {
		if err := tx.PutTemplate(page); err != nil {
			return err
		}
		return errBack
	}); !errors.Is(err, errBack) {
		t.Fatalf("rolled-back put: %v", err)
	}
	mustUpdate(t, db, func(tx store.Tx) error { return tx.DeleteTemplate("pf", store.TemplateKindPage, "pt") })
	if n := feedRows(t, db, store.ChangeTemplates, "pf"); n != 2 {
		t.Fatalf("after a rolled-back put and a delete: %d feed rows, want 2", n)
	}
}

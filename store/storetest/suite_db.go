package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// DB tests the transactions themselves (store.DB): a closed store and a
// cancelled context refuse them, concurrent Batch calls commit apart,
// writes fail in a View, and Stats counts the queues.
func (s Suite) DB(t *testing.T) {
	parallel(t, []subtest{
		{"Closed", s.dbClosed},
		{"Canceled", s.dbCanceled},
		{"Batch", s.dbBatch},
		{"WritesInView", s.dbWritesInView},
		{"Stats", s.dbStats},
	})
}

// dbClosed: after Close, transactions return ErrClosed.
func (s Suite) dbClosed(t *testing.T) {
	db := s.open(t, store.Options{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	none := func(store.Tx) error { return nil }
	for name, call := range map[string]func() error{
		"View":   func() error { return db.View(ctx, none) },
		"Update": func() error { return db.Update(ctx, none) },
		"Batch":  func() error { return db.Batch(ctx, none) },
	} {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// dbCanceled: a context already done refuses a write, changing nothing.
func (s Suite) dbCanceled(t *testing.T) {
	db := s.open(t, store.Options{})
	done, cancel := context.WithCancel(ctx)
	cancel()
	put := func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("h")) }
	if err := db.Update(done, put); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update: %v, want context.Canceled", err)
	}
	if err := db.Batch(done, put); !errors.Is(err, context.Canceled) {
		t.Fatalf("Batch: %v, want context.Canceled", err)
	}
	view(t, db, func(tx store.Tx) error {
		if h, err := tx.AdminTokenHash(); err != nil || h != nil {
			return fmt.Errorf("stored %q (%v) after refused writes", h, err)
		}
		return nil
	})
}

// dbBatch: concurrent Batch calls all commit; a failing call gets its
// own error and does not undo the others.
func (s Suite) dbBatch(t *testing.T) {
	db := s.open(t, store.Options{})
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Batch(ctx, func(tx store.Tx) error {
				if i%50 == 7 {
					return fmt.Errorf("call %d refuses", i)
				}
				return tx.AddAuthEvent(&store.AuthEvent{ID: fmt.Sprintf("ev%03d", i), ProjectID: "p", CreatedAt: time.Unix(int64(i), 0)})
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i%50 == 7 {
			if err == nil || err.Error() != fmt.Sprintf("call %d refuses", i) {
				t.Fatalf("call %d: err = %v", i, err)
			}
		} else if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	view(t, db, func(tx store.Tx) error {
		evs, _, err := tx.AuthEvents(store.AuthEventFilter{ProjectID: "p", Limit: 1000})
		if err == nil && len(evs) != 196 {
			err = fmt.Errorf("%d events committed, want 196", len(evs))
		}
		return err
	})
}

// dbWritesInView: a write in a View fails (each in a View of its own),
// and changes nothing.
func (s Suite) dbWritesInView(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	writes := map[string]func(tx store.Tx) error{
		"SetAdminTokenHash": func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("h")) },
		"PutProject":        func(tx store.Tx) error { return tx.PutProject(&store.Project{ID: "p", CreatedAt: at}) },
		"PutAPIKey":         func(tx store.Tx) error { return tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_x", Mode: "test"}) },
		"PutUser": func(tx store.Tx) error {
			return tx.PutUser(&store.User{ID: "u", ProjectID: "p", Email: "a@example.com"})
		},
		"PutSession": func(tx store.Tx) error { return tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p"}) },
		"PutRefreshToken": func(tx store.Tx) error {
			// Its session first, in the same View: both are refused.
			tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p"})
			return tx.PutRefreshToken(&store.RefreshToken{SessionID: "s", Hash: []byte("h"), ProjectID: "p", ExpiresAt: at})
		},
		"PutCode": func(tx store.Tx) error {
			return tx.PutCode(&store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com"})
		},
		"PutThrottle": func(tx store.Tx) error {
			return tx.PutThrottle("otp", "p", "a@example.com", &store.Throttle{Sends: []time.Time{at}})
		},
		"PutFactor":  func(tx store.Tx) error { return tx.PutFactor(&store.Factor{UserID: "u", ProjectID: "p", Kind: "totp"}) },
		"PutPasskey": func(tx store.Tx) error { return tx.PutPasskey(&store.Passkey{ID: "c", UserID: "u", ProjectID: "p"}) },
		"PutIdentity": func(tx store.Tx) error {
			return tx.PutIdentity(&store.Identity{ProjectID: "p", Issuer: "i", Subject: "s", UserID: "u"})
		},
		"PutWebhook":  func(tx store.Tx) error { return tx.PutWebhook(&store.Webhook{ID: "w", ProjectID: "p"}) },
		"EnqueueJob":  func(tx store.Tx) error { return tx.EnqueueJob(&store.Job{WebhookID: "w", NextAttemptAt: at}) },
		"AppendEvent": func(tx store.Tx) error { return tx.AppendEvent(&store.Event{ID: "e", Type: "user.login"}) },
		"EnqueueMail": func(tx store.Tx) error { return tx.EnqueueMail(&store.Mail{To: "a@example.com", CreatedAt: at}) },
		"AddAuthEvent": func(tx store.Tx) error {
			return tx.AddAuthEvent(&store.AuthEvent{ID: "e", ProjectID: "p", Success: true, CreatedAt: at})
		},
		"PutTemplate": func(tx store.Tx) error {
			return tx.PutTemplate(&store.Template{ProjectID: "p", Kind: "otp", Locale: "en", Subject: "s", UpdatedAt: at})
		},
	}
	for name, write := range writes {
		if err := db.View(ctx, write); err == nil {
			t.Errorf("%s in a View succeeded", name)
		}
	}
	view(t, db, func(tx store.Tx) error {
		for name, err := range map[string]error{
			"AdminTokenHash": func() error {
				if h, err := tx.AdminTokenHash(); err != nil || h != nil {
					return fmt.Errorf("%q, %v", h, err)
				}
				return nil
			}(),
			"Project":  wantNotFound(tx.Project("p")),
			"User":     wantNotFound(tx.User("u")),
			"Session":  wantNotFound(tx.Session("s")),
			"Code":     wantNotFound(tx.Code("otp", "p", "a@example.com")),
			"Webhook":  wantNotFound(tx.Webhook("p", "w")),
			"Template": wantNotFound(tx.Template("p", "otp", "en")),
			"Events": func() error {
				if n, err := tx.AuthEventCount("p"); err != nil || n != 0 {
					return fmt.Errorf("%d, %v", n, err)
				}
				return nil
			}(),
			"Mail": func() error {
				if n, err := tx.MailCount(); err != nil || n != 0 {
					return fmt.Errorf("%d, %v", n, err)
				}
				return nil
			}(),
			"RefreshToken": wantNotFound(tx.RefreshToken("s", []byte("h"))),
		} {
			if err != nil {
				t.Errorf("%s after the refused writes: %v", name, err)
			}
		}
		return nil
	})
}

// wantNotFound returns nil when err is ErrNotFound, else an error that
// says what was found.
func wantNotFound[T any](v T, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("found %+v, %v; want ErrNotFound", v, err)
}

// dbStats: the queue sizes and the oldest queued mail are read back; a
// data file has a size, a database without a file its size in both.
func (s Suite) dbStats(t *testing.T) {
	db := s.open(t, store.Options{})
	st, err := db.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.MailQueued != 0 || !st.OldestMail.IsZero() || st.DeliveriesQueued != 0 || st.OutboxEvents != 0 {
		t.Fatalf("empty store: %+v", st)
	}
	if _, ok := db.(store.File); ok && (st.FileSize <= 0 || st.DataSize <= 0) {
		t.Fatalf("empty file: %+v", st)
	}
	if _, ok := db.(store.File); !ok && (st.DataSize != st.FileSize || st.FreeSize != 0) {
		t.Fatalf("a store without a file: %+v, want its size in FileSize and DataSize, no FreeSize", st)
	}
	first := time.Date(2026, 11, 24, 9, 0, 0, 1, time.UTC)
	update(t, db, func(tx store.Tx) error {
		for i := range 3 {
			if err := tx.EnqueueMail(&store.Mail{To: "a@example.com", CreatedAt: first.Add(time.Duration(i) * time.Minute)}); err != nil {
				return err
			}
		}
		if err := tx.EnqueueJob(&store.Job{WebhookID: "w", NextAttemptAt: first}); err != nil {
			return err
		}
		return tx.AppendEvent(&store.Event{ID: "evt_1", Type: "user.registered"})
	})
	if st, err = db.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	if st.MailQueued != 3 || !st.OldestMail.Equal(first) || st.DeliveriesQueued != 1 || st.OutboxEvents != 1 {
		t.Fatalf("stats=%+v, want 3 mails (oldest %v), 1 delivery, 1 event", st, first)
	}
}

package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// Codes tests the one-time codes, the send and failure histories, the
// magic links and the remembered devices (store.Codes): exact round
// trips keyed by any bytes, replacement, deletion, and histories counted
// by concurrent writers.
func (s Suite) Codes(t *testing.T) {
	parallel(t, []subtest{
		{"Codes", s.codesCodes},
		{"Throttles", s.codesThrottles},
		{"ThrottleWriters", s.codesThrottleWriters},
		{"MagicLinks", s.codesMagicLinks},
		{"Devices", s.codesDevices},
	})
}

// codesCodes: every field comes back; a subject is any string, byte for
// byte (a NUL, bytes that are not UTF-8); a code is found by (kind,
// project, subject) only; a new code replaces the old one whole;
// deleting twice is no error.
func (s Suite) codesCodes(t *testing.T) {
	db := s.open(t, store.Options{})
	subjects := []string{"a@example.com", "ext:a\x00b", "\xff\xfe"}
	codes := []*store.Code{
		{Kind: "otp", ProjectID: "p1", Subject: subjects[0], Phone: "+15551234567", Email: "new@example.com", Hash: []byte{0, 1, 2}, Attempts: 3, CreatedAt: t0, ExpiresAt: t0.Add(10 * time.Minute)},
		{Kind: "email", ProjectID: "p1", Subject: subjects[1], Hash: []byte{}, CreatedAt: t0},
		{Kind: "replay", ProjectID: "m1", Subject: subjects[2]},
	}
	complete(t, codes[0])
	update(t, db, func(tx store.Tx) error {
		for _, c := range codes {
			if err := tx.PutCode(c); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range codes {
			got, err := tx.Code(want.Kind, want.ProjectID, want.Subject)
			if err != nil {
				return fmt.Errorf("Code(%q): %v", want.Subject, err)
			}
			if err := diff("code", got, want); err != nil {
				return err
			}
		}
		for name, err := range map[string]error{
			"another project's": wantNotFound(tx.Code("otp", "p2", subjects[0])),
			"another kind's":    wantNotFound(tx.Code("sms", "p1", subjects[0])),
			"another subject's": wantNotFound(tx.Code("otp", "p1", subjects[0]+"\x00")),
			"a prefix's":        wantNotFound(tx.Code("otp", "p1", "a@example.co")),
		} {
			if err != nil {
				return fmt.Errorf("%s code: %w", name, err)
			}
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Code("otp", "p1", subjects[0])) }, func(tx store.Tx, bad string) map[string]error {
		th, err := tx.Throttle("otp", bad, "a@example.com")
		if err == nil && len(th.Sends) != 0 {
			err = fmt.Errorf("history %+v", th)
		}
		return map[string]error{
			"Code":             wantNotFound(tx.Code("otp", bad, subjects[0])),
			"Code/kind":        wantNotFound(tx.Code(bad, "p1", subjects[0])),
			"DeleteCode":       tx.DeleteCode(&store.Code{Kind: bad, ProjectID: bad, Subject: bad}),
			"Throttle":         err,
			"DeleteMagicLinks": wantZero(tx.DeleteMagicLinks(bad, "a@example.com")),
		}
	})
	next := &store.Code{Kind: "otp", ProjectID: "p1", Subject: subjects[0], Hash: []byte{9}, CreatedAt: t0.Add(time.Minute), ExpiresAt: t0.Add(11 * time.Minute)}
	update(t, db, func(tx store.Tx) error { return tx.PutCode(next) })
	update(t, db, func(tx store.Tx) error {
		got, err := tx.Code("otp", "p1", subjects[0])
		if err != nil {
			return err
		}
		if err := diff("replaced code", got, next); err != nil {
			return err
		}
		if err := tx.DeleteCode(next); err != nil {
			return err
		}
		if err := tx.DeleteCode(next); err != nil {
			return fmt.Errorf("deleting a deleted code: %v", err)
		}
		if _, err := tx.Code("otp", "p1", subjects[0]); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted code: err=%v, want ErrNotFound", err)
		}
		return nil
	})
}

// codesThrottles: an unknown history is an empty one; every time comes
// back in order, the zero time too; a history without sends is deleted.
func (s Suite) codesThrottles(t *testing.T) {
	db := s.open(t, store.Options{})
	view(t, db, func(tx store.Tx) error {
		th, err := tx.Throttle("otp", "p1", "a@example.com")
		if err != nil || th == nil || len(th.Sends) != 0 || !th.KeepUntil.IsZero() {
			return fmt.Errorf("unknown history: %+v, %v; want an empty one", th, err)
		}
		return nil
	})
	histories := map[string]*store.Throttle{
		"a@example.com": {Sends: []time.Time{t0, t0.Add(time.Second)}},
		"ext:x\x00y":    {Sends: []time.Time{{}, t0}, KeepUntil: t0.Add(24 * time.Hour)},
		"\xff":          {Sends: []time.Time{t0.Add(time.Nanosecond), t0, t0.Add(time.Hour)}},
	}
	complete(t, histories["ext:x\x00y"])
	update(t, db, func(tx store.Tx) error {
		for s, th := range histories {
			if err := tx.PutThrottle("email_fail", "p1", s, th); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for s, want := range histories {
			got, err := tx.Throttle("email_fail", "p1", s)
			if err != nil {
				return err
			}
			if err := diff("history", got, want); err != nil {
				return err
			}
			if th, err := tx.Throttle("otp", "p1", s); err != nil || len(th.Sends) != 0 {
				return fmt.Errorf("another kind's history: %+v, %v", th, err)
			}
		}
		// Without sends, the history is deleted.
		if err := tx.PutThrottle("email_fail", "p1", "a@example.com", &store.Throttle{KeepUntil: t0}); err != nil {
			return err
		}
		got, err := tx.Throttle("email_fail", "p1", "a@example.com")
		if err != nil || len(got.Sends) != 0 || !got.KeepUntil.IsZero() {
			return fmt.Errorf("emptied history: %+v, %v", got, err)
		}
		n, err := tx.ExpiringCount(store.ExpiringCodes)
		if err != nil || n != 2 {
			return fmt.Errorf("ExpiringCount(codes)=%d, %v; want 2", n, err)
		}
		return nil
	})
}

// codesThrottleWriters: 20 requests count a failure each on one history
// at once (read, append, write back in one Update, the way auth does
// it): none is lost, from an absent row and from an existing one.
func (s Suite) codesThrottleWriters(t *testing.T) {
	db := s.open(t, store.Options{})
	const n = 20
	for round := 1; round <= 2; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- db.Update(ctx, func(tx store.Tx) error {
					th, err := tx.Throttle("backup_fail", "p1", "email:a@example.com")
					if err != nil {
						return err
					}
					th.Sends = append(th.Sends, t0.Add(time.Duration(i)*time.Millisecond))
					return tx.PutThrottle("backup_fail", "p1", "email:a@example.com", th)
				})
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		view(t, db, func(tx store.Tx) error {
			th, err := tx.Throttle("backup_fail", "p1", "email:a@example.com")
			if err != nil {
				return err
			}
			if got := len(th.Sends); got != round*n {
				return fmt.Errorf("round %d: %d failures counted, want %d", round, got, round*n)
			}
			return nil
		})
	}
}

// codesMagicLinks: every field comes back, used or not; DeleteMagicLinks
// removes a project's links for an address and counts them, not another
// address's or project's.
func (s Suite) codesMagicLinks(t *testing.T) {
	db := s.open(t, store.Options{})
	links := []*store.MagicLink{
		{Hash: []byte("h1"), ProjectID: "p1", Email: "a@example.com", RedirectURL: "https://app.example.com/x?y=1", CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute), UsedAt: ptrTo(t0.Add(time.Minute))},
		{Hash: []byte("h2"), ProjectID: "p1", Email: "a@example.com", CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)},
		{Hash: []byte("h3"), ProjectID: "p1", Email: "b@example.com", ExpiresAt: t0},
		{Hash: []byte("h4"), ProjectID: "p2", Email: "a@example.com", ExpiresAt: t0},
		{Hash: []byte{0, 0xff}, ProjectID: "p2", Email: "c@example.com", ExpiresAt: t0, UsedAt: ptrTo(time.Time{})},
	}
	complete(t, links[0])
	update(t, db, func(tx store.Tx) error {
		for _, m := range links {
			if err := tx.PutMagicLink(m); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, want := range links {
			got, err := tx.MagicLink(want.Hash)
			if err != nil {
				return err
			}
			if err := diff("link", got, want); err != nil {
				return err
			}
		}
		if _, err := tx.MagicLink([]byte("nope")); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("unknown link: err=%v, want ErrNotFound", err)
		}
		n, err := tx.DeleteMagicLinks("p1", "a@example.com")
		if err != nil || n != 2 {
			return fmt.Errorf("DeleteMagicLinks=%d, %v; want 2", n, err)
		}
		if n, err := tx.DeleteMagicLinks("p1", "a@example.com"); err != nil || n != 0 {
			return fmt.Errorf("DeleteMagicLinks again=%d, %v; want 0", n, err)
		}
		for _, h := range []string{"h1", "h2"} {
			if _, err := tx.MagicLink([]byte(h)); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("deleted link %s: %v", h, err)
			}
		}
		for _, h := range []string{"h3", "h4"} {
			if _, err := tx.MagicLink([]byte(h)); err != nil {
				return fmt.Errorf("link %s of another address or project: %v", h, err)
			}
		}
		return nil
	})
}

// codesDevices: every field comes back, keys of any bytes; a zero
// LastUsedAt is stored as CreatedAt, in the value passed too; a device
// is replaced whole.
func (s Suite) codesDevices(t *testing.T) {
	db := s.open(t, store.Options{})
	devices := []*store.Device{
		{Key: []byte{0, 1, 0xff}, Hash: []byte("h"), UserID: "u-full", ProjectID: "p-full", CreatedAt: t0, LastUsedAt: t0.Add(time.Hour)},
		{Key: []byte("k2"), Hash: []byte{}, UserID: "u", ProjectID: "p"},
		{Key: []byte("k3"), UserID: "u", ProjectID: "p", CreatedAt: t0},
	}
	complete(t, devices[0])
	update(t, db, func(tx store.Tx) error {
		for _, d := range devices {
			if err := tx.PutDevice(d); err != nil {
				return fmt.Errorf("device %x: %w", d.Key, err)
			}
		}
		return nil
	})
	if !devices[2].LastUsedAt.Equal(t0) || !devices[1].LastUsedAt.IsZero() {
		t.Fatalf("PutDevice left LastUsedAt %v (created %v), %v (created at the zero time)", devices[2].LastUsedAt, t0, devices[1].LastUsedAt)
	}
	view(t, db, func(tx store.Tx) error {
		for _, want := range devices {
			got, err := tx.Device(want.Key)
			if err != nil {
				return err
			}
			if err := diff(fmt.Sprintf("device %x", want.Key), got, want); err != nil {
				return err
			}
		}
		return wantNotFound(tx.Device([]byte{0, 1}))
	})
	moved := &store.Device{Key: []byte("k3"), Hash: []byte{7}, UserID: "u2", ProjectID: "q", CreatedAt: t0.Add(time.Hour), LastUsedAt: t0.Add(2 * time.Hour)}
	update(t, db, func(tx store.Tx) error { return tx.PutDevice(moved) })
	view(t, db, func(tx store.Tx) error {
		got, err := tx.Device([]byte("k3"))
		if err != nil {
			return err
		}
		return diff("replaced device", got, moved)
	})
}

package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// openEvents opens a store on a fresh database.
func openEvents(t *testing.T, opt store.Options) store.DB {
	t.Helper()
	db, _, err := store.Open(context.Background(), newDatabase(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// evUpdate runs fn in an Update and fails the test on its error.
func evUpdate(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// evView runs fn in a View and fails the test on its error.
func evView(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

var evT0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

// odd is a string PostgreSQL's text refuses (NUL, invalid UTF-8): the
// columns that may hold it are bytea.
const odd = "a\x00b\xff\xfe c"

// TestWebhookRoundTrip: every field of a webhook comes back exactly, nil
// and empty event types and secrets apart; Put replaces; lookups by ids
// no row can have find nothing.
func TestWebhookRoundTrip(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	hooks := []*store.Webhook{
		{ID: "w1", ProjectID: "p", URL: "https://example.com/h", Secret: []byte{0, 1, 2, 255}, EventTypes: []string{"user.login", "user.created"}, Mode: "live", CreatedAt: evT0},
		{ID: "w2", ProjectID: "p", URL: "https://example.com/2", Secret: []byte{}, EventTypes: []string{}, Mode: "test"},
		{ID: "w0", ProjectID: "p", URL: "u", Mode: ""},
		{ID: "w1", ProjectID: "q", URL: "other project", Mode: "live", CreatedAt: evT0.Add(time.Nanosecond)},
	}
	evUpdate(t, db, func(tx store.Tx) error {
		for _, w := range hooks {
			if err := tx.PutWebhook(w); err != nil {
				return err
			}
		}
		return nil
	})
	evView(t, db, func(tx store.Tx) error {
		for _, want := range hooks {
			got, err := tx.Webhook(want.ProjectID, want.ID)
			if err != nil {
				return err
			}
			if !got.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("%s/%s: created %v, want %v", want.ProjectID, want.ID, got.CreatedAt, want.CreatedAt)
			}
			got.CreatedAt = want.CreatedAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		}
		ws, err := tx.Webhooks("p")
		if err != nil {
			return err
		}
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		if fmt.Sprint(ids) != "[w0 w1 w2]" {
			t.Errorf("Webhooks(p) = %v", ids)
		}
		if ws, err := tx.Webhooks("none"); ws != nil || err != nil {
			t.Errorf("Webhooks(none) = %v, %v", ws, err)
		}
		for _, id := range []string{"missing", odd} {
			if _, err := tx.Webhook("p", id); err != store.ErrNotFound {
				t.Errorf("Webhook(%q): %v, want ErrNotFound", id, err)
			}
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		return tx.PutWebhook(&store.Webhook{ID: "w1", ProjectID: "p", URL: "changed", Mode: "test"})
	})
	evView(t, db, func(tx store.Tx) error {
		w, err := tx.Webhook("p", "w1")
		if err != nil || w.URL != "changed" || w.Secret != nil || w.EventTypes != nil || !w.CreatedAt.IsZero() {
			return fmt.Errorf("replaced webhook = %+v, %v", w, err)
		}
		return nil
	})
}

// TestDeleteWebhook: a webhook goes with its jobs and delivery records;
// another webhook's stay.
func TestDeleteWebhook(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	var job *store.Job
	evUpdate(t, db, func(tx store.Tx) error {
		for _, id := range []string{"w1", "w2"} {
			if err := tx.PutWebhook(&store.Webhook{ID: id, ProjectID: "p", URL: "u", Mode: "live"}); err != nil {
				return err
			}
			j := &store.Job{WebhookID: id, ProjectID: "p", EventID: "e", NextAttemptAt: evT0}
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
			if id == "w1" {
				job = j
			}
			if err := tx.AddDelivery(&store.Delivery{ID: "d", WebhookID: id, CreatedAt: evT0}); err != nil {
				return err
			}
		}
		return tx.DeleteWebhook(&store.Webhook{ID: "w1", ProjectID: "p"})
	})
	evView(t, db, func(tx store.Tx) error {
		if _, err := tx.Webhook("p", "w1"); err != store.ErrNotFound {
			t.Errorf("deleted webhook: %v", err)
		}
		if ds, _ := tx.Deliveries("w1", 10); len(ds) != 0 {
			t.Errorf("deleted webhook keeps %d deliveries", len(ds))
		}
		if ds, _ := tx.Deliveries("w2", 10); len(ds) != 1 {
			t.Errorf("other webhook has %d deliveries", len(ds))
		}
		if n, _ := tx.JobCount(); n != 1 {
			t.Errorf("%d jobs queued, want the other webhook's 1", n)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		if ok, err := tx.DeleteJob(job); ok || err != nil {
			t.Errorf("DeleteJob of a deleted webhook's job = %v, %v", ok, err)
		}
		return nil
	})
}

// TestJobRoundTrip: every field of a job comes back; a job with a Seq
// keeps it; DeleteJob needs the exact key; NextJobAt and JobCount.
func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	jobs := []*store.Job{
		{WebhookID: "w", ProjectID: "p", EventID: "e1", EventType: "user.login", Body: []byte(`{"a":1}`), Attempt: 3, CreatedAt: evT0, NextAttemptAt: evT0.Add(time.Second)},
		{WebhookID: "w", ProjectID: "p", EventID: "e2", Body: []byte{}, NextAttemptAt: evT0},
		{WebhookID: "w", EventID: "e3"}, // no time: due at once
	}
	evView(t, db, func(tx store.Tx) error {
		if _, ok, err := tx.NextJobAt(); ok || err != nil {
			t.Errorf("NextJobAt on an empty queue: %v, %v", ok, err)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		for _, j := range jobs {
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
		}
		// A retry keeps its Seq.
		return tx.EnqueueJob(&store.Job{Seq: jobs[0].Seq, WebhookID: "w", EventID: "e1", Attempt: 4, NextAttemptAt: evT0.Add(time.Hour)})
	})
	if jobs[0].Seq == 0 || jobs[1].Seq <= jobs[0].Seq || jobs[2].Seq <= jobs[1].Seq {
		t.Fatalf("seqs %d %d %d", jobs[0].Seq, jobs[1].Seq, jobs[2].Seq)
	}
	evView(t, db, func(tx store.Tx) error {
		got, err := tx.DueJobs(evT0.Add(time.Minute), 10, "", 10, func(string, int) int { return 10 }, func(uint64) bool { return false })
		if err != nil {
			return err
		}
		want := []*store.Job{jobs[2], jobs[1], jobs[0]}
		if len(got) != len(want) {
			return fmt.Errorf("%d due jobs, want %d", len(got), len(want))
		}
		for i := range want {
			if !got[i].CreatedAt.Equal(want[i].CreatedAt) || !got[i].NextAttemptAt.Equal(want[i].NextAttemptAt) {
				t.Errorf("job %d: times %v %v, want %v %v", i, got[i].CreatedAt, got[i].NextAttemptAt, want[i].CreatedAt, want[i].NextAttemptAt)
			}
			got[i].CreatedAt, got[i].NextAttemptAt = want[i].CreatedAt, want[i].NextAttemptAt
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("job %d = %#v, want %#v", i, got[i], want[i])
			}
		}
		next, ok, err := tx.NextJobAt()
		if err != nil || !ok || !next.IsZero() {
			t.Errorf("NextJobAt = %v, %v, %v; want the zero time (a job without one)", next, ok, err)
		}
		if n, _ := tx.JobCount(); n != 4 {
			t.Errorf("JobCount = %d, want 4", n)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		moved := *jobs[0]
		moved.NextAttemptAt = moved.NextAttemptAt.Add(time.Nanosecond)
		if ok, err := tx.DeleteJob(&moved); ok || err != nil {
			t.Errorf("DeleteJob at another time = %v, %v", ok, err)
		}
		for _, j := range jobs {
			if ok, err := tx.DeleteJob(j); !ok || err != nil {
				t.Errorf("DeleteJob(%s) = %v, %v", j.EventID, ok, err)
			}
		}
		return nil
	})
	evView(t, db, func(tx store.Tx) error {
		next, ok, err := tx.NextJobAt()
		if err != nil || !ok || !next.Equal(evT0.Add(time.Hour)) {
			t.Errorf("NextJobAt = %v, %v, %v; want the retry's", next, ok, err)
		}
		return nil
	})
}

// TestDueJobs: each webhook's due jobs come earliest first, a webhook
// without room is skipped, jobs in flight are skipped, future jobs wait,
// webhooks are served in turn after the last one served.
func TestDueJobs(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	evT0 := time.Unix(1_800_000_000, 0)
	evUpdate(t, db, func(tx store.Tx) error {
		for i := 0; i < 5; i++ {
			for _, h := range []string{"hook-a", "hook-b"} {
				if err := tx.EnqueueJob(&store.Job{WebhookID: h, EventID: fmt.Sprint(h[5:], i), NextAttemptAt: evT0.Add(time.Duration(i) * time.Second)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	due := func(now time.Time, limit int, after string, room map[string]int, skip map[string]bool) string {
		var ids []string
		evView(t, db, func(tx store.Tx) error {
			seqs := map[uint64]bool{}
			jobs, err := tx.DueJobs(now, 100, "", 100, func(string, int) int { return 100 }, func(uint64) bool { return false })
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if skip[j.EventID] {
					seqs[j.Seq] = true
				}
			}
			jobs, err = tx.DueJobs(now, limit, after, 100, func(h string, _ int) int { return room[h] }, func(s uint64) bool { return seqs[s] })
			if err != nil {
				return err
			}
			for _, j := range jobs {
				ids = append(ids, j.EventID)
			}
			return nil
		})
		return fmt.Sprint(ids)
	}
	if got := due(evT0.Add(2*time.Second), 10, "", map[string]int{"hook-a": 2, "hook-b": 10}, map[string]bool{"b0": true}); got != "[a0 a1 b1 b2]" {
		t.Fatalf("due = %s", got)
	}
	if got := due(evT0.Add(time.Hour), 3, "", map[string]int{"hook-a": 0, "hook-b": 10}, nil); got != "[b0 b1 b2]" {
		t.Fatalf("due = %s", got)
	}
	all := map[string]int{"hook-a": 10, "hook-b": 10}
	for _, tt := range []struct{ after, want string }{
		{"hook-a", "[b0]"}, {"hook-b", "[a0]"}, {"hook-0", "[a0]"}, {"hook-z", "[a0]"}, {"", "[a0]"}, {"hook-", "[a0]"}, {odd, "[a0]"},
	} {
		if got := due(evT0.Add(time.Hour), 1, tt.after, all, nil); got != tt.want {
			t.Fatalf("due after %q = %s, want %s", tt.after, got, tt.want)
		}
	}
	if got := due(evT0.Add(time.Second), 10, "hook-a", all, nil); got != "[b0 b1 a0 a1]" {
		t.Fatalf("due after hook-a = %s, want [b0 b1 a0 a1]", got)
	}
	if got := due(evT0.Add(time.Second), 0, "", all, nil); got != "[]" {
		t.Fatalf("limit 0: %s", got)
	}
}

// TestDueJobsPeek: room hears how many of a webhook's due jobs are not
// skipped, counted up to peek; a webhook without room even at peek is
// passed over without counting; one with only future jobs is visited.
func TestDueJobsPeek(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	evT0 := time.Unix(1_800_000_000, 0)
	var skipSeq uint64
	evUpdate(t, db, func(tx store.Tx) error {
		for i := 0; i < 5; i++ {
			j := &store.Job{WebhookID: "hook-a", EventID: fmt.Sprint("a", i), NextAttemptAt: evT0}
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
			if i == 0 {
				skipSeq = j.Seq
			}
		}
		for _, j := range []*store.Job{
			{WebhookID: "hook-b", EventID: "b0", NextAttemptAt: evT0},
			{WebhookID: "hook-b", EventID: "b1", NextAttemptAt: evT0.Add(time.Second)},
			{WebhookID: "hook-b", EventID: "b2", NextAttemptAt: evT0.Add(time.Hour)},
			{WebhookID: "hook-c", EventID: "c0", NextAttemptAt: evT0},
			{WebhookID: "hook-d", EventID: "d0", NextAttemptAt: evT0.Add(time.Hour)},
		} {
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
		}
		return nil
	})
	heard := map[string][]int{}
	var ids []string
	evView(t, db, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(evT0.Add(time.Minute), 10, "", 3, func(h string, due int) int {
			heard[h] = append(heard[h], due)
			switch h {
			case "hook-a":
				return due - 1
			case "hook-b", "hook-d":
				return 10
			}
			return 0
		}, func(seq uint64) bool { return seq == skipSeq })
		if err != nil {
			return err
		}
		for _, j := range jobs {
			ids = append(ids, j.EventID)
		}
		return nil
	})
	if got := fmt.Sprint(ids); got != "[a1 a2 b0 b1]" {
		t.Fatalf("due = %s", got)
	}
	if got := fmt.Sprint(heard); got != "map[hook-a:[3 3] hook-b:[3 2] hook-c:[3] hook-d:[3]]" {
		t.Fatalf("room heard %s, want each webhook asked at peek, then with its count up to peek", got)
	}
}

// TestDueJobsMany: more webhooks than one chunk visits, a webhook with
// more jobs in flight than the scan reads ahead, and bodies of jobs taken
// past the first few of a webhook: each job is taken once, in order,
// with its body.
func TestDueJobsMany(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	const hooks, backlog = 150, 60
	evUpdate(t, db, func(tx store.Tx) error {
		for h := range hooks {
			for i := range 2 {
				if err := tx.EnqueueJob(&store.Job{WebhookID: fmt.Sprintf("h%03d", h), EventID: fmt.Sprint(i), Body: []byte(fmt.Sprintf("h%03d/%d", h, i)), NextAttemptAt: evT0}); err != nil {
					return err
				}
			}
		}
		for i := range backlog {
			if err := tx.EnqueueJob(&store.Job{WebhookID: "zz", EventID: fmt.Sprint(i), Body: []byte(fmt.Sprint("zz/", i)), NextAttemptAt: evT0.Add(time.Duration(i))}); err != nil {
				return err
			}
		}
		return nil
	})
	// Only the last webhook has room, and its first 40 jobs are in
	// flight: the scan reads on past its first peek+slack rows.
	inflight := map[uint64]bool{}
	evView(t, db, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(evT0.Add(time.Second), 1000, "", 1000, func(string, int) int { return 1000 }, func(uint64) bool { return false })
		if err != nil {
			return err
		}
		if len(jobs) != 2*hooks+backlog {
			return fmt.Errorf("%d due jobs, want %d", len(jobs), 2*hooks+backlog)
		}
		for _, j := range jobs {
			if string(j.Body) != fmt.Sprint(j.WebhookID, "/", j.EventID) {
				return fmt.Errorf("job %s/%s has body %q", j.WebhookID, j.EventID, j.Body)
			}
			if j.WebhookID == "zz" && len(inflight) < 40 {
				inflight[j.Seq] = true
			}
		}
		var heard []string
		jobs, err = tx.DueJobs(evT0.Add(time.Hour), 15, "h010", 10, func(h string, n int) int {
			heard = append(heard, fmt.Sprint(h, ":", n))
			if h == "zz" {
				return n
			}
			return 0
		}, func(seq uint64) bool { return inflight[seq] })
		if err != nil {
			return err
		}
		var got []string
		for _, j := range jobs {
			if string(j.Body) != fmt.Sprint(j.WebhookID, "/", j.EventID) {
				return fmt.Errorf("job %s/%s has body %q", j.WebhookID, j.EventID, j.Body)
			}
			got = append(got, j.EventID)
		}
		if fmt.Sprint(got) != "[40 41 42 43 44 45 46 47 48 49]" {
			return fmt.Errorf("zz gave %v", got)
		}
		// Visited in order after h010, wrapping around to it.
		if len(heard) != hooks+2 || heard[0] != "h011:10" || heard[hooks-11] != "zz:10" || heard[hooks-10] != "zz:10" || heard[hooks+1] != "h010:10" {
			return fmt.Errorf("room heard %d calls: %v ... %v", len(heard), heard[:3], heard[len(heard)-3:])
		}
		return nil
	})
}

// TestDeliveries: every field comes back; pages newest first by Seq
// cover every record once; the sweep deletes records DeliveryLifetime
// after the attempt.
func TestDeliveries(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	next := evT0.Add(time.Minute)
	d0 := &store.Delivery{ID: "d0", WebhookID: "w1", EventID: "evt", EventType: "user.login", Attempt: 2, Status: "pending",
		ResponseStatus: 502, Error: odd, DurationMS: 1234, CreatedAt: evT0, NextAttemptAt: &next}
	evUpdate(t, db, func(tx store.Tx) error {
		if err := tx.AddDelivery(d0); err != nil {
			return err
		}
		for i := range 7 {
			for _, w := range []string{"w1", "w2"} {
				d := &store.Delivery{ID: fmt.Sprint(w, "-", i), WebhookID: w, Status: "succeeded", CreatedAt: evT0.Add(time.Duration(i) * time.Hour)}
				if i == 3 {
					d.NextAttemptAt = &time.Time{} // a pointer to the zero time stays one
				}
				if err := tx.AddDelivery(d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	evView(t, db, func(tx store.Tx) error {
		ds, more, err := tx.DeliveriesBefore("w1", d0.Seq+1, 5)
		if err != nil || len(ds) != 1 || more {
			return fmt.Errorf("before %d: %d, %v, %v", d0.Seq+1, len(ds), more, err)
		}
		got := ds[0]
		if !got.CreatedAt.Equal(evT0) || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(next) {
			return fmt.Errorf("times %v %v", got.CreatedAt, got.NextAttemptAt)
		}
		got.CreatedAt, got.NextAttemptAt = d0.CreatedAt, d0.NextAttemptAt
		if !reflect.DeepEqual(got, d0) {
			return fmt.Errorf("got %#v, want %#v", got, d0)
		}
		var seen []string
		var before uint64
		for {
			ds, more, err := tx.DeliveriesBefore("w1", before, 3)
			if err != nil {
				return err
			}
			for _, d := range ds {
				seen = append(seen, d.ID)
				before = d.Seq
			}
			if !more {
				break
			}
		}
		if got, want := fmt.Sprint(seen), "[w1-6 w1-5 w1-4 w1-3 w1-2 w1-1 w1-0 d0]"; got != want {
			return fmt.Errorf("pages showed %s, want %s", got, want)
		}
		if ds, err := tx.Deliveries("w2", 2); err != nil || len(ds) != 2 || ds[0].ID != "w2-6" || ds[0].NextAttemptAt != nil {
			return fmt.Errorf("Deliveries(w2, 2) = %+v, %v", ds, err)
		}
		if ds, _ := tx.Deliveries("w2", 4); len(ds) != 4 || ds[3].NextAttemptAt == nil || !ds[3].NextAttemptAt.IsZero() {
			return fmt.Errorf("a pointer to the zero time came back as %v", ds[3].NextAttemptAt)
		}
		if ds, more, err := tx.DeliveriesBefore("w3", 0, 10); err != nil || ds == nil || len(ds) != 0 || more {
			return fmt.Errorf("unknown webhook: %v, %v, %v", ds, more, err)
		}
		if ds, more, _ := tx.DeliveriesBefore("w1", 0, 0); len(ds) != 0 || !more {
			return fmt.Errorf("limit 0: %d, more=%v", len(ds), more)
		}
		return nil
	})
	// The sweep: records of the first three hours are due 30 days on.
	now := evT0.Add(store.DeliveryLifetime + 2*time.Hour)
	evView(t, db, func(tx store.Tx) error {
		if due, err := tx.ExpiryDue(store.ExpiringDeliveries, evT0); due || err != nil {
			return fmt.Errorf("ExpiryDue before any is due: %v, %v", due, err)
		}
		if due, err := tx.ExpiryDue(store.ExpiringDeliveries, now); !due || err != nil {
			return fmt.Errorf("ExpiryDue: %v, %v", due, err)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		n, err := tx.SweepExpired(store.ExpiringDeliveries, now, 100)
		if err != nil || n != 7 {
			return fmt.Errorf("swept %d, %v; want 7", n, err)
		}
		if n, _ := tx.ExpiringCount(store.ExpiringDeliveries); n != 8 {
			return fmt.Errorf("%d left, want 8", n)
		}
		return nil
	})
}

// TestOutbox: events come back in Seq order with every field, data byte
// for byte (not as jsonb would); deleted ones go.
func TestOutbox(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	evs := []*store.Event{
		{ID: "evt_1", ProjectID: "p", Type: "user.login", CreatedAt: evT0, Data: json.RawMessage(`{"b": 1,  "a":2}`)},
		{ID: "evt_2", Type: "user.created", Data: json.RawMessage{}},
		{ID: "evt_3", ProjectID: "p", Type: "x"},
	}
	evView(t, db, func(tx store.Tx) error {
		if yes, err := tx.HasEvents(); yes || err != nil {
			return fmt.Errorf("HasEvents on an empty outbox: %v, %v", yes, err)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.AppendEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	evView(t, db, func(tx store.Tx) error {
		if yes, err := tx.HasEvents(); !yes || err != nil {
			return fmt.Errorf("HasEvents: %v, %v", yes, err)
		}
		got, err := tx.EventsAfter(0, 10)
		if err != nil || len(got) != 3 {
			return fmt.Errorf("EventsAfter: %d, %v", len(got), err)
		}
		for i, want := range evs {
			if !got[i].CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("event %d created %v", i, got[i].CreatedAt)
			}
			got[i].CreatedAt = want.CreatedAt
			if want.Data == nil {
				want.Data = json.RawMessage{} // nil and empty alike, as on bbolt
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Errorf("event %d = %#v, want %#v", i, got[i], want)
			}
		}
		if got, _ := tx.EventsAfter(evs[0].Seq, 1); len(got) != 1 || got[0].ID != "evt_2" {
			t.Errorf("EventsAfter(first, 1) = %v", got)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.DeleteEvent(e.Seq); err != nil {
				return err
			}
		}
		return nil
	})
	evView(t, db, func(tx store.Tx) error {
		if yes, _ := tx.HasEvents(); yes {
			t.Fatal("events left after deleting them all")
		}
		return nil
	})
}

// TestMailQueue: every field comes back; due mail in id order, a message
// without a next attempt due at once; PutMail replaces (and requeues a
// deleted one under its id); RecentMail newest first across its pages.
func TestMailQueue(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	m0 := &store.Mail{ProjectID: "p", To: "a@example.com", Kind: "otp", Body: []byte{1, 2, 3}, Attempts: 2, LastError: odd, CreatedAt: evT0, NextAttemptAt: evT0.Add(time.Minute)}
	evUpdate(t, db, func(tx store.Tx) error {
		if err := tx.EnqueueMail(m0); err != nil {
			return err
		}
		for i := range 40 {
			if err := tx.EnqueueMail(&store.Mail{To: fmt.Sprint(i), CreatedAt: evT0}); err != nil {
				return err
			}
		}
		return nil
	})
	evView(t, db, func(tx store.Tx) error {
		due, err := tx.DueMail(evT0, 100)
		if err != nil || len(due) != 40 || due[0].To != "0" || !due[0].NextAttemptAt.IsZero() || due[0].Body == nil {
			return fmt.Errorf("DueMail(evT0) = %d, %v", len(due), err)
		}
		due, _ = tx.DueMail(evT0.Add(time.Minute), 2)
		if len(due) != 2 || due[0].ID != m0.ID {
			return fmt.Errorf("DueMail(evT0+1m, 2) = %v", due)
		}
		got := due[0]
		if !got.CreatedAt.Equal(m0.CreatedAt) || !got.NextAttemptAt.Equal(m0.NextAttemptAt) {
			return fmt.Errorf("times %v %v", got.CreatedAt, got.NextAttemptAt)
		}
		got.CreatedAt, got.NextAttemptAt = m0.CreatedAt, m0.NextAttemptAt
		if !reflect.DeepEqual(got, m0) {
			return fmt.Errorf("got %#v, want %#v", got, m0)
		}
		var ids []uint64
		if err := tx.RecentMail(func(m *store.Mail) bool { ids = append(ids, m.ID); return true }); err != nil {
			return err
		}
		if len(ids) != 41 || !slices.IsSortedFunc(ids, func(a, b uint64) int { return int(b) - int(a) }) || ids[40] != m0.ID {
			return fmt.Errorf("RecentMail gave %v", ids)
		}
		ids = nil
		tx.RecentMail(func(m *store.Mail) bool { ids = append(ids, m.ID); return len(ids) < 3 })
		if len(ids) != 3 {
			return fmt.Errorf("RecentMail went on after false: %d", len(ids))
		}
		if n, _ := tx.MailCount(); n != 41 {
			return fmt.Errorf("MailCount = %d", n)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		m := *m0
		m.Attempts, m.LastError = 3, "again"
		if err := tx.PutMail(&m); err != nil {
			return err
		}
		if err := tx.DeleteMail(m0.ID + 1); err != nil {
			return err
		}
		return tx.PutMail(&store.Mail{ID: m0.ID + 1, To: "back"})
	})
	evView(t, db, func(tx store.Tx) error {
		due, _ := tx.DueMail(evT0.Add(time.Minute), 2)
		if due[0].Attempts != 3 || due[0].LastError != "again" || due[1].To != "back" {
			return fmt.Errorf("after PutMail: %+v %+v", due[0], due[1])
		}
		return nil
	})
}

// TestStats: queue sizes, the oldest queued mail and the database size.
func TestStats(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	st, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.MailQueued != 0 || !st.OldestMail.IsZero() || st.DeliveriesQueued != 0 || st.OutboxEvents != 0 || st.FileSize <= 0 || st.DataSize != st.FileSize || st.FreeSize != 0 {
		t.Fatalf("empty database: %+v", st)
	}
	first := time.Date(2026, 11, 24, 9, 0, 0, 1, time.UTC)
	evUpdate(t, db, func(tx store.Tx) error {
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
	if st, err = db.Stats(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.MailQueued != 3 || !st.OldestMail.Equal(first) || st.DeliveriesQueued != 1 || st.OutboxEvents != 1 {
		t.Fatalf("stats=%+v, want 3 mails (oldest %v), 1 delivery, 1 event", st, first)
	}
}

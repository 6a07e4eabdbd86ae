package storetest

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// Webhooks tests the webhooks, their queued jobs and their delivery
// records (store.Webhooks): exact round trips, DeleteWebhook with its
// jobs and records, the queue's keys and its scan for the worker
// (DueJobs), and the records' pages.
func (s Suite) Webhooks(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.webhooksRoundTrip},
		{"Delete", s.webhooksDelete},
		{"Jobs", s.webhooksJobs},
		{"DueJobs", s.webhooksDueJobs},
		{"DueJobsPeek", s.webhooksDueJobsPeek},
		{"DueJobsMany", s.webhooksDueJobsMany},
		{"Deliveries", s.webhooksDeliveries},
	})
}

// odd is a string that is not text (a NUL, bytes that are not UTF-8).
const odd = "a\x00b\xff\xfe c"

// webhooksRoundTrip: every field of a webhook comes back exactly; a
// project's webhooks list in id order, nil when it has none; Put
// replaces whole; lookups by ids no row can have find nothing.
func (s Suite) webhooksRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	hooks := []*store.Webhook{
		{ID: "w1", ProjectID: "p", URL: "https://example.com/h", Secret: []byte{0, 1, 2, 255}, EventTypes: []string{"user.login", "user.created"}, Mode: "live", CreatedAt: t0},
		{ID: "w2", ProjectID: "p", URL: "https://example.com/2", Secret: []byte{}, EventTypes: []string{}, Mode: "test"},
		{ID: "w0", ProjectID: "p", URL: "u", Mode: ""},
		{ID: "w1", ProjectID: "q", URL: "other project", Mode: "live", CreatedAt: t0.Add(time.Nanosecond)},
	}
	complete(t, hooks[0])
	update(t, db, func(tx store.Tx) error {
		for _, w := range hooks {
			if err := tx.PutWebhook(w); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range hooks {
			got, err := tx.Webhook(want.ProjectID, want.ID)
			if err != nil {
				return err
			}
			if err := diff("webhook", got, want); err != nil {
				return err
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
			return fmt.Errorf("Webhooks(p) = %v", ids)
		}
		if err := diff("p's w1 listed", ws[1], hooks[0]); err != nil {
			return err
		}
		if ws, err := tx.Webhooks("none"); ws != nil || err != nil {
			return fmt.Errorf("Webhooks(none) = %v, %v", ws, err)
		}
		for _, id := range []string{"missing", odd} {
			if err := wantNotFound(tx.Webhook("p", id)); err != nil {
				return fmt.Errorf("Webhook(%q): %w", id, err)
			}
		}
		return wantNotFound(tx.Webhook("r", "w1"))
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Webhook("p", "w1")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"Webhook":          wantNotFound(tx.Webhook(bad, "w1")),
			"Webhooks":         wantNone(tx.Webhooks(bad)),
			"DeleteWebhook":    tx.DeleteWebhook(&store.Webhook{ID: bad, ProjectID: bad}),
			"Deliveries":       wantNone(tx.Deliveries(bad, 10)),
			"DeliveriesBefore": wantNone(page(tx.DeliveriesBefore(bad, 0, 10))),
		}
	})
	replaced := &store.Webhook{ID: "w1", ProjectID: "p", URL: "changed", Mode: "test"}
	update(t, db, func(tx store.Tx) error { return tx.PutWebhook(replaced) })
	view(t, db, func(tx store.Tx) error {
		w, err := tx.Webhook("p", "w1")
		if err != nil {
			return err
		}
		return diff("replaced webhook", w, replaced)
	})
}

// webhooksDelete: a webhook goes with its jobs and delivery records;
// another webhook's stay; DeleteJob of a deleted webhook's job reports
// false.
func (s Suite) webhooksDelete(t *testing.T) {
	db := s.open(t, store.Options{})
	var job *store.Job
	update(t, db, func(tx store.Tx) error {
		for _, id := range []string{"w1", "w2"} {
			if err := tx.PutWebhook(&store.Webhook{ID: id, ProjectID: "p", URL: "u", Mode: "live"}); err != nil {
				return err
			}
			j := &store.Job{WebhookID: id, ProjectID: "p", EventID: "e", NextAttemptAt: t0}
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
			if id == "w1" {
				job = j
			}
			if err := tx.AddDelivery(&store.Delivery{ID: "d", WebhookID: id, CreatedAt: t0}); err != nil {
				return err
			}
		}
		if err := tx.DeleteWebhook(&store.Webhook{ID: "w1", ProjectID: "p"}); err != nil {
			return err
		}
		return tx.DeleteWebhook(&store.Webhook{ID: "w1", ProjectID: "p"}) // already gone: nil
	})
	view(t, db, func(tx store.Tx) error {
		if err := wantNotFound(tx.Webhook("p", "w1")); err != nil {
			return fmt.Errorf("deleted webhook: %w", err)
		}
		if ds, _ := tx.Deliveries("w1", 10); len(ds) != 0 {
			return fmt.Errorf("deleted webhook keeps %d deliveries", len(ds))
		}
		if ds, _ := tx.Deliveries("w2", 10); len(ds) != 1 {
			return fmt.Errorf("other webhook has %d deliveries", len(ds))
		}
		if n, _ := tx.JobCount(); n != 1 {
			return fmt.Errorf("%d jobs queued, want the other webhook's 1", n)
		}
		if n, _ := tx.ExpiringCount(store.ExpiringDeliveries); n != 1 {
			return fmt.Errorf("%d delivery records due for the sweep, want the other webhook's 1", n)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		if ok, err := tx.DeleteJob(job); ok || err != nil {
			return fmt.Errorf("DeleteJob of a deleted webhook's job = %v, %v", ok, err)
		}
		return nil
	})
	check(t, db)
}

// webhooksJobs: every field of a job comes back; sequence numbers grow;
// a retry keeps its Seq; DeleteJob needs the exact key; NextJobAt and
// JobCount.
func (s Suite) webhooksJobs(t *testing.T) {
	db := s.open(t, store.Options{})
	jobs := []*store.Job{
		{WebhookID: "w", ProjectID: "p", EventID: "e1", EventType: "user.login", Body: []byte(`{"a":1}`), Attempt: 3, CreatedAt: t0, NextAttemptAt: t0.Add(time.Second)},
		{WebhookID: "w", ProjectID: "p", EventID: "e2", Body: []byte{}, NextAttemptAt: t0},
		{WebhookID: "w", EventID: "e3"}, // no time: due at once
	}
	view(t, db, func(tx store.Tx) error {
		if _, ok, err := tx.NextJobAt(); ok || err != nil {
			return fmt.Errorf("NextJobAt on an empty queue: %v, %v", ok, err)
		}
		if n, err := tx.JobCount(); n != 0 || err != nil {
			return fmt.Errorf("JobCount on an empty queue: %d, %v", n, err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, j := range jobs {
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
		}
		// A retry keeps its Seq.
		return tx.EnqueueJob(&store.Job{Seq: jobs[0].Seq, WebhookID: "w", EventID: "e1", Attempt: 4, NextAttemptAt: t0.Add(time.Hour)})
	})
	complete(t, jobs[0])
	if jobs[0].Seq == 0 || jobs[1].Seq <= jobs[0].Seq || jobs[2].Seq <= jobs[1].Seq {
		t.Fatalf("seqs %d %d %d", jobs[0].Seq, jobs[1].Seq, jobs[2].Seq)
	}
	view(t, db, func(tx store.Tx) error {
		got, err := tx.DueJobs(t0.Add(time.Minute), 10, "", 10, func(string, int) int { return 10 }, func(uint64) bool { return false })
		if err != nil {
			return err
		}
		if err := diff("due jobs", got, []*store.Job{jobs[2], jobs[1], jobs[0]}); err != nil {
			return err
		}
		next, ok, err := tx.NextJobAt()
		if err != nil || !ok || !next.IsZero() {
			return fmt.Errorf("NextJobAt = %v, %v, %v; want the zero time (a job without one)", next, ok, err)
		}
		if n, _ := tx.JobCount(); n != 4 {
			return fmt.Errorf("JobCount = %d, want 4", n)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		moved := *jobs[0]
		moved.NextAttemptAt = moved.NextAttemptAt.Add(time.Nanosecond)
		if ok, err := tx.DeleteJob(&moved); ok || err != nil {
			return fmt.Errorf("DeleteJob at another time = %v, %v", ok, err)
		}
		for _, j := range jobs {
			if ok, err := tx.DeleteJob(j); !ok || err != nil {
				return fmt.Errorf("DeleteJob(%s) = %v, %v", j.EventID, ok, err)
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		next, ok, err := tx.NextJobAt()
		if err != nil || !ok || !next.Equal(t0.Add(time.Hour)) {
			return fmt.Errorf("NextJobAt = %v, %v, %v; want the retry's", next, ok, err)
		}
		if n, _ := tx.JobCount(); n != 1 {
			return fmt.Errorf("JobCount = %d, want the retry", n)
		}
		return nil
	})
}

// webhooksDueJobs: each webhook's due jobs come earliest first, a
// webhook without room is skipped, jobs in flight are skipped, future
// jobs wait, webhooks are served in turn after the last one served.
func (s Suite) webhooksDueJobs(t *testing.T) {
	db := s.open(t, store.Options{})
	t0 := time.Unix(1_800_000_000, 0)
	update(t, db, func(tx store.Tx) error {
		for i := range 5 {
			for _, h := range []string{"hook-a", "hook-b"} {
				if err := tx.EnqueueJob(&store.Job{WebhookID: h, EventID: fmt.Sprint(h[5:], i), NextAttemptAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	due := func(now time.Time, limit int, after string, room map[string]int, skip map[string]bool) string {
		t.Helper()
		var ids []string
		view(t, db, func(tx store.Tx) error {
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
	if got := due(t0.Add(2*time.Second), 10, "", map[string]int{"hook-a": 2, "hook-b": 10}, map[string]bool{"b0": true}); got != "[a0 a1 b1 b2]" {
		t.Fatalf("due = %s", got)
	}
	if got := due(t0.Add(time.Hour), 3, "", map[string]int{"hook-a": 0, "hook-b": 10}, nil); got != "[b0 b1 b2]" {
		t.Fatalf("due = %s", got)
	}
	// Round robin: after hook-a comes hook-b, then hook-a again; a
	// one-job scan after hook-a serves hook-b, after hook-b serves hook-a.
	all := map[string]int{"hook-a": 10, "hook-b": 10}
	for _, tt := range []struct{ after, want string }{
		{"hook-a", "[b0]"}, {"hook-b", "[a0]"}, {"hook-0", "[a0]"}, {"hook-z", "[a0]"}, {"", "[a0]"}, {"hook-", "[a0]"}, {odd, "[a0]"},
	} {
		if got := due(t0.Add(time.Hour), 1, tt.after, all, nil); got != tt.want {
			t.Fatalf("due after %q = %s, want %s", tt.after, got, tt.want)
		}
	}
	if got := due(t0.Add(time.Second), 10, "hook-a", all, nil); got != "[b0 b1 a0 a1]" {
		t.Fatalf("due after hook-a = %s, want [b0 b1 a0 a1]", got)
	}
	if got := due(t0.Add(time.Second), 0, "", all, nil); got != "[]" {
		t.Fatalf("limit 0: %s", got)
	}
	view(t, db, func(tx store.Tx) error {
		if next, ok, err := tx.NextJobAt(); !ok || err != nil || !next.Equal(t0) {
			return fmt.Errorf("NextJobAt = %v, %v, %v; want %v", next, ok, err, t0)
		}
		return nil
	})
}

// webhooksDueJobsPeek: room hears how many of a webhook's due jobs are
// not skipped, counted up to peek; a webhook without room even at peek
// is passed over without counting; one with only future jobs is
// visited.
func (s Suite) webhooksDueJobsPeek(t *testing.T) {
	db := s.open(t, store.Options{})
	t0 := time.Unix(1_800_000_000, 0)
	var skipSeq uint64
	update(t, db, func(tx store.Tx) error {
		for i := range 5 {
			j := &store.Job{WebhookID: "hook-a", EventID: fmt.Sprint("a", i), NextAttemptAt: t0}
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
			if i == 0 {
				skipSeq = j.Seq
			}
		}
		for _, j := range []*store.Job{
			{WebhookID: "hook-b", EventID: "b0", NextAttemptAt: t0},
			{WebhookID: "hook-b", EventID: "b1", NextAttemptAt: t0.Add(time.Second)},
			{WebhookID: "hook-b", EventID: "b2", NextAttemptAt: t0.Add(time.Hour)},
			{WebhookID: "hook-c", EventID: "c0", NextAttemptAt: t0},
			{WebhookID: "hook-d", EventID: "d0", NextAttemptAt: t0.Add(time.Hour)},
		} {
			if err := tx.EnqueueJob(j); err != nil {
				return err
			}
		}
		return nil
	})
	heard := map[string][]int{}
	var ids []string
	view(t, db, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(t0.Add(time.Minute), 10, "", 3, func(h string, due int) int {
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

// webhooksDueJobsMany: more webhooks than a scan may read at once, a
// webhook with more jobs in flight than the scan reads ahead, and
// bodies of jobs taken past the first few of a webhook: each job is
// taken once, in order, with its body.
func (s Suite) webhooksDueJobsMany(t *testing.T) {
	db := s.open(t, store.Options{})
	const hooks, backlog = 150, 60
	update(t, db, func(tx store.Tx) error {
		for h := range hooks {
			for i := range 2 {
				if err := tx.EnqueueJob(&store.Job{WebhookID: fmt.Sprintf("h%03d", h), EventID: fmt.Sprint(i), Body: []byte(fmt.Sprintf("h%03d/%d", h, i)), NextAttemptAt: t0}); err != nil {
					return err
				}
			}
		}
		for i := range backlog {
			if err := tx.EnqueueJob(&store.Job{WebhookID: "zz", EventID: fmt.Sprint(i), Body: []byte(fmt.Sprint("zz/", i)), NextAttemptAt: t0.Add(time.Duration(i))}); err != nil {
				return err
			}
		}
		return nil
	})
	// Only the last webhook has room, and its first 40 jobs are in
	// flight: the scan reads on past its first few rows.
	inflight := map[uint64]bool{}
	view(t, db, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(t0.Add(time.Second), 1000, "", 1000, func(string, int) int { return 1000 }, func(uint64) bool { return false })
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
		jobs, err = tx.DueJobs(t0.Add(time.Hour), 15, "h010", 10, func(h string, n int) int {
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

// webhooksDeliveries: every field of a record comes back, a pointer to
// the zero time as one; pages newest first by Seq, each starting below
// the last Seq of the previous one, cover every record once, never
// another webhook's; an unknown webhook has none (never nil); the sweep
// deletes records DeliveryLifetime after the attempt.
func (s Suite) webhooksDeliveries(t *testing.T) {
	db := s.open(t, store.Options{})
	next := t0.Add(time.Minute)
	d0 := &store.Delivery{ID: "d0", WebhookID: "w1", EventID: "evt", EventType: "user.login", Attempt: 2, Status: "pending",
		ResponseStatus: 502, Error: odd, DurationMS: 1234, CreatedAt: t0, NextAttemptAt: &next}
	update(t, db, func(tx store.Tx) error {
		if err := tx.AddDelivery(d0); err != nil {
			return err
		}
		for i := range 7 {
			for _, w := range []string{"w1", "w2"} {
				d := &store.Delivery{ID: fmt.Sprint(w, "-", i), WebhookID: w, Status: "succeeded", CreatedAt: t0.Add(time.Duration(i) * time.Hour)}
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
	complete(t, d0)
	view(t, db, func(tx store.Tx) error {
		ds, more, err := tx.DeliveriesBefore("w1", d0.Seq+1, 5)
		if err != nil || len(ds) != 1 || more {
			return fmt.Errorf("before %d: %d, %v, %v", d0.Seq+1, len(ds), more, err)
		}
		if err := diff("delivery", ds[0], d0); err != nil {
			return err
		}
		var seen []string
		var before uint64
		for pages := 0; ; pages++ {
			if pages > 3 {
				return fmt.Errorf("more pages than records: %v", seen)
			}
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
		if ds, err := tx.Deliveries("w3", 10); err != nil || ds == nil || len(ds) != 0 {
			return fmt.Errorf("Deliveries of an unknown webhook: %v, %v", ds, err)
		}
		if ds, more, err := tx.DeliveriesBefore("w3", 0, 10); err != nil || ds == nil || len(ds) != 0 || more {
			return fmt.Errorf("DeliveriesBefore of an unknown webhook: %v, %v, %v", ds, more, err)
		}
		if ds, more, _ := tx.DeliveriesBefore("w1", 0, 0); len(ds) != 0 || !more {
			return fmt.Errorf("limit 0: %d, more=%v", len(ds), more)
		}
		return nil
	})
	// The sweep: records of the first three hours are due 30 days on.
	now := t0.Add(store.DeliveryLifetime + 2*time.Hour)
	view(t, db, func(tx store.Tx) error {
		if due, err := tx.ExpiryDue(store.ExpiringDeliveries, t0); due || err != nil {
			return fmt.Errorf("ExpiryDue before any is due: %v, %v", due, err)
		}
		if due, err := tx.ExpiryDue(store.ExpiringDeliveries, now); !due || err != nil {
			return fmt.Errorf("ExpiryDue: %v, %v", due, err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		n, err := tx.SweepExpired(store.ExpiringDeliveries, now, 100)
		if err != nil || n != 7 {
			return fmt.Errorf("swept %d, %v; want 7", n, err)
		}
		if n, _ := tx.ExpiringCount(store.ExpiringDeliveries); n != 8 {
			return fmt.Errorf("%d left, want 8", n)
		}
		if ds, _ := tx.Deliveries("w1", 10); len(ds) != 4 || ds[3].ID != "w1-3" {
			return fmt.Errorf("w1 keeps %d records after the sweep, want 4", len(ds))
		}
		return nil
	})
}

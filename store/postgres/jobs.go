package postgres

import (
	"math"
	"time"

	"latchkey/store"
)

// Queued webhook delivery jobs (table jobs), keyed like bbolt's by
// (webhook_id, next_attempt_at, seq).

// EnqueueJob queues j, assigning j.Seq first when it is zero. A job
// already queued under the same key is replaced.
func (tx *txn) EnqueueJob(j *store.Job) error {
	args := []any{j.WebhookID, attemptNanos(j.NextAttemptAt), j.ProjectID, j.EventID, j.EventType, j.Body, j.Attempt, timeArg(j.CreatedAt)}
	const upsert = ` ON CONFLICT (webhook_id, next_attempt_at, seq) DO UPDATE SET project_id = excluded.project_id,
		event_id = excluded.event_id, event_type = excluded.event_type, body = excluded.body,
		attempt = excluded.attempt, created_at = excluded.created_at, lease_until = NULL`
	if j.Seq == 0 {
		var seq int64
		err := tx.one(`INSERT INTO jobs (webhook_id, next_attempt_at, project_id, event_id, event_type, body, attempt, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`+upsert+` RETURNING seq`, args, &seq)
		if err != nil {
			return err
		}
		j.Seq = uint64(seq)
		return nil
	}
	seq, err := seqArg(j.Seq)
	if err != nil {
		return err
	}
	_, err = tx.exec(`INSERT INTO jobs (webhook_id, next_attempt_at, project_id, event_id, event_type, body, attempt, created_at, seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`+upsert, append(args, seq)...)
	return err
}

// How DueJobs reads. It visits the webhooks that have jobs in chunks:
// one statement finds the next webhook ids (a loose index scan: one
// probe each) and walks each one's due jobs in key order, one index
// probe per job, up to peek+jobSkipSlack of them, with the body of the
// first jobBodies only. (One range read per webhook with ORDER BY and
// LIMIT may be planned as a bitmap scan and a sort, which reads the
// webhook's whole due backlog: a probe per row is a plain index scan
// under any plan.) The callbacks run in Go over the rows, in bbolt's
// order; a webhook with more jobs in flight than the slack is read on
// with a statement of its own, and the bodies of taken jobs not sent
// along come with one more statement. The common case (a few webhooks,
// each taking its first or second due job) is one round trip.
const (
	// jobSkipSlack is how many rows beyond peek a webhook's walk reads,
	// for jobs the caller skips (in flight).
	jobSkipSlack = 16
	// jobBodies is how many of a webhook's first due jobs come with
	// their body in the scan.
	jobBodies = 4
	// jobHooksFirst is how many webhooks the first chunk visits; each
	// next chunk visits four times more, up to jobHooksMax.
	jobHooksFirst = 32
	jobHooksMax   = 1024
	// maxPeek bounds peek: room hears a backlog counted up to it.
	maxPeek = 1 << 20
)

// dueJobsSQL is the chunk statement: $1 the first webhook id to visit
// (inclusive), $2 how many webhooks, $3 the due bound, $4 the rows per
// webhook, $5 how many of them come with their body, $6 the last id to
// visit (inclusive; only when bounded). A webhook without due jobs
// yields one row whose job columns are NULL.
func dueJobsSQL(bounded bool) string {
	hi := ""
	if bounded {
		hi = ` AND webhook_id <= $6`
	}
	const job = `next_attempt_at, seq, project_id, event_id, event_type, attempt, created_at`
	return `WITH RECURSIVE hooks(id) AS (
		SELECT min(webhook_id) FROM jobs WHERE webhook_id >= $1` + hi + `
		UNION ALL
		SELECT (SELECT min(webhook_id) FROM jobs WHERE webhook_id > h.id` + hi + `)
		FROM hooks h WHERE h.id IS NOT NULL
	), ids AS (
		SELECT id FROM hooks WHERE id IS NOT NULL LIMIT $2
	), walk AS (
		SELECT ids.id AS hook, 1 AS rn, f.*
		FROM ids LEFT JOIN LATERAL (
			SELECT ` + job + `, CASE WHEN 1 <= $5 THEN body END AS body FROM jobs
			WHERE webhook_id = ids.id AND next_attempt_at <= $3
			ORDER BY next_attempt_at, seq LIMIT 1) f ON true
		UNION ALL
		SELECT w.hook, w.rn + 1, n.*
		FROM walk w, LATERAL (
			SELECT ` + job + `, CASE WHEN w.rn + 1 <= $5 THEN body END FROM jobs
			WHERE webhook_id = w.hook AND next_attempt_at <= $3 AND (next_attempt_at, seq) > (w.next_attempt_at, w.seq)
			ORDER BY next_attempt_at, seq LIMIT 1) n
		WHERE w.rn < $4
	)
	SELECT hook, ` + job + `, rn <= $5, body FROM walk ORDER BY hook, rn`
}

// dueJob is a due job read by DueJobs; full tells whether its Body was
// read.
type dueJob struct {
	job  *store.Job
	at   int64
	full bool
}

// dueHook is a webhook visited by DueJobs with its due jobs read so far.
type dueHook struct {
	id   string
	jobs []*dueJob
}

// DueJobs returns up to limit jobs due at now, visiting webhooks in id
// byte order from after's successor, wrapping around (see store.Tx).
func (tx *txn) DueJobs(now time.Time, limit int, after string, peek int, room func(webhookID string, due int) int, skip func(seq uint64) bool) ([]*store.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	peek = min(max(peek, 1), maxPeek)
	perHook := int64(peek) + jobSkipSlack
	if !storable(after) {
		after = "" // no webhook has such an id: start from the first
	}
	due := unixNano(now)
	var out []*dueJob
	// Pass 0: ids after after (>= after+"\x01", the first string above
	// it: ids hold no NUL), to the end. Pass 1: from the first id up to
	// and including after.
	for pass := 0; pass < 2 && len(out) < limit; pass++ {
		from, bounded := "", false
		if pass == 0 && after != "" {
			from = after + "\x01"
		}
		if pass == 1 {
			if after == "" {
				break
			}
			bounded = true
		}
		for chunk := jobHooksFirst; len(out) < limit; chunk = min(4*chunk, jobHooksMax) {
			hooks, err := tx.dueChunk(bounded, from, after, chunk, due, perHook)
			if err != nil {
				return nil, err
			}
			for _, h := range hooks {
				if len(out) >= limit {
					break
				}
				if room(h.id, peek) <= 0 {
					continue // no room, whatever its backlog
				}
				found, err := tx.dueFound(h, peek, perHook, due, skip)
				if err != nil {
					return nil, err
				}
				if len(found) > 0 {
					n := min(room(h.id, len(found)), len(found), limit-len(out))
					out = append(out, found[:max(n, 0)]...)
				}
			}
			if len(hooks) < chunk {
				break // the pass has no more webhooks
			}
			from = hooks[len(hooks)-1].id + "\x01"
		}
	}
	if err := tx.jobBodies(out); err != nil {
		return nil, err
	}
	jobs := make([]*store.Job, len(out))
	for i, d := range out {
		jobs[i] = d.job
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return jobs, nil
}

// dueChunk reads up to n webhooks that have jobs, from from (inclusive)
// and, when bounded, up to to (inclusive), each with its first perHook
// due jobs.
func (tx *txn) dueChunk(bounded bool, from, to string, n int, due, perHook int64) ([]*dueHook, error) {
	args := []any{from, n, due, perHook, jobBodies}
	if bounded {
		args = append(args, to)
	}
	rows, err := tx.query(dueJobsSQL(bounded), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hooks []*dueHook
	for rows.Next() {
		var id string
		var at, seq, created *int64
		var project, event, typ *string
		var attempt *int
		var full *bool
		var body []byte
		if err := rows.Scan(&id, &at, &seq, &project, &event, &typ, &attempt, &created, &full, &body); err != nil {
			return nil, err
		}
		if len(hooks) == 0 || hooks[len(hooks)-1].id != id {
			hooks = append(hooks, &dueHook{id: id})
		}
		if seq == nil {
			continue // no due job
		}
		h := hooks[len(hooks)-1]
		j := &store.Job{Seq: uint64(*seq), WebhookID: id, ProjectID: *project, EventID: *event, EventType: *typ,
			Attempt: *attempt, CreatedAt: timeOfNull(created), NextAttemptAt: attemptTime(*at)}
		if *full {
			j.Body = body
		}
		h.jobs = append(h.jobs, &dueJob{job: j, at: *at, full: *full})
	}
	return hooks, tx.note(unavailable(rows.Err()))
}

// dueFound returns h's first peek due jobs that skip leaves, reading on
// past the rows of the chunk when they ran out before peek were found.
func (tx *txn) dueFound(h *dueHook, peek int, perHook, due int64, skip func(uint64) bool) ([]*dueJob, error) {
	var found []*dueJob
	rows := h.jobs
	for {
		for _, d := range rows {
			if len(found) == peek {
				return found, nil
			}
			if !skip(d.job.Seq) {
				found = append(found, d)
			}
		}
		if len(found) == peek || int64(len(rows)) < perHook {
			return found, nil
		}
		last := rows[len(rows)-1]
		perHook *= 2
		var err error
		if rows, err = tx.dueAfter(h.id, due, last.at, int64(last.job.Seq), perHook); err != nil {
			return nil, err
		}
	}
}

// dueAfter reads up to n of webhookID's due jobs after (at, seq), without
// their bodies, one index probe each (see dueJobsSQL).
func (tx *txn) dueAfter(webhookID string, due, at, seq, n int64) ([]*dueJob, error) {
	const job = `next_attempt_at, seq, project_id, event_id, event_type, attempt, created_at`
	rows, err := tx.query(`WITH RECURSIVE walk AS (
			(SELECT 1 AS rn, `+job+` FROM jobs
			WHERE webhook_id = $1 AND next_attempt_at <= $2 AND (next_attempt_at, seq) > ($3, $4)
			ORDER BY next_attempt_at, seq LIMIT 1)
			UNION ALL
			SELECT w.rn + 1, n.* FROM walk w, LATERAL (
				SELECT `+job+` FROM jobs
				WHERE webhook_id = $1 AND next_attempt_at <= $2 AND (next_attempt_at, seq) > (w.next_attempt_at, w.seq)
				ORDER BY next_attempt_at, seq LIMIT 1) n
			WHERE w.rn < $5
		)
		SELECT `+job+` FROM walk ORDER BY rn`, webhookID, due, at, seq, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*dueJob
	for rows.Next() {
		d := &dueJob{job: &store.Job{WebhookID: webhookID}}
		var seq int64
		var created *int64
		if err := rows.Scan(&d.at, &seq, &d.job.ProjectID, &d.job.EventID, &d.job.EventType, &d.job.Attempt, &created); err != nil {
			return nil, err
		}
		d.job.Seq, d.job.CreatedAt, d.job.NextAttemptAt = uint64(seq), timeOfNull(created), attemptTime(d.at)
		out = append(out, d)
	}
	return out, tx.note(unavailable(rows.Err()))
}

// jobBodies reads the bodies of the jobs of ds that came without one.
func (tx *txn) jobBodies(ds []*dueJob) error {
	var hooks []string
	var ats, seqs []int64
	type key struct {
		hook    string
		at, seq int64
	}
	missing := map[key]*dueJob{}
	for _, d := range ds {
		if !d.full {
			hooks = append(hooks, d.job.WebhookID)
			ats = append(ats, d.at)
			seqs = append(seqs, int64(d.job.Seq))
			missing[key{d.job.WebhookID, d.at, int64(d.job.Seq)}] = d
		}
	}
	if len(missing) == 0 {
		return nil
	}
	rows, err := tx.query(`SELECT j.webhook_id, j.next_attempt_at, j.seq, j.body FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS k(webhook_id, at, seq)
		JOIN jobs j ON j.webhook_id = k.webhook_id AND j.next_attempt_at = k.at AND j.seq = k.seq`, hooks, ats, seqs)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		var body []byte
		if err := rows.Scan(&k.hook, &k.at, &k.seq, &body); err != nil {
			return err
		}
		if d := missing[k]; d != nil {
			d.job.Body, d.full = body, true
		}
	}
	return tx.note(unavailable(rows.Err()))
}

// NextJobAt returns the earliest NextAttemptAt of every queued job (one
// probe of jobs_due), and false when none is queued.
func (tx *txn) NextJobAt() (time.Time, bool, error) {
	var at *int64
	if err := tx.one(`SELECT min(next_attempt_at) FROM jobs`, nil, &at); err != nil || at == nil {
		return time.Time{}, false, err
	}
	return attemptTime(*at), true, nil
}

// DeleteJob removes the job (j.WebhookID, j.NextAttemptAt, j.Seq) and
// reports whether it was queued.
func (tx *txn) DeleteJob(j *store.Job) (bool, error) {
	if j.Seq > math.MaxInt64 || !storable(j.WebhookID) {
		return false, nil
	}
	tag, err := tx.exec(`DELETE FROM jobs WHERE webhook_id = $1 AND next_attempt_at = $2 AND seq = $3`,
		j.WebhookID, attemptNanos(j.NextAttemptAt), int64(j.Seq))
	return err == nil && tag.RowsAffected() > 0, err
}

// JobCount returns how many jobs are queued (it counts them all).
func (tx *txn) JobCount() (int, error) {
	var n int
	err := tx.one(`SELECT count(*) FROM jobs`, nil, &n)
	return n, err
}

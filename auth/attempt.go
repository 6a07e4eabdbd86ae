package auth

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"latchkey/store"
)

// attempt is one authentication attempt of a use case, as its event will
// record it: the project, the user and address it names (filled in as
// they become known), the method and action, the request (Meta), and the
// verification's velocity slot. A use case makes one (Service.attempt),
// runs its transaction through update or batch and ends the attempt in
// it with ok or fail; a failure outside any transaction (a malformed
// request, a refusal before anything is read, or one whose transaction
// must change nothing) is reject. One per request; not safe for
// concurrent use. ctx is the request's: its transactions run under it.
type attempt struct {
	s                        *Service
	ctx                      context.Context
	projectID, userID, email string
	method, action           string
	m                        Meta
	risk                     *riskSlot // reserveRisk's slot: marked failed when a wrong guess commits
	failure                  error     // what fail recorded: the use case's answer (result)
	mail                     *mailbox  // the messages it queues, rendered before its transaction (mailbox.go)
}

// attempt starts recording an attempt at method and action in projectID
// ("" when the request names no project), for the request of ctx.
func (s *Service) attempt(ctx context.Context, projectID, method, action string, m Meta) *attempt {
	return &attempt{s: s, ctx: ctx, projectID: projectID, method: method, action: action, m: m}
}

// of names u as the attempt's user: its project, id and address as they
// are now (call it again after changing the address).
func (a *attempt) of(u *store.User) *attempt {
	a.projectID, a.userID, a.email = u.ProjectID, u.ID, u.Email
	return a
}

// ok records the attempt's success inside tx.
func (a *attempt) ok(tx store.Tx) error { return a.record(tx, nil) }

// fail records failure inside tx, to commit with what else the
// transaction changed (a counted try, a lockout), and keeps it as the
// use case's answer (result). It returns the store's error, nil when the
// event is written: the transaction commits.
func (a *attempt) fail(tx store.Tx, failure error) error {
	a.failure = failure
	return a.record(tx, failure)
}

// steppedUp reads the user of session pr into a (sessionUserTx) and
// checks that pr proved itself recently enough to change a factor
// (requireRecentAuth). When it did not, refused is true, the refusal is
// recorded on a, and err is what the transaction function returns so
// that the record commits (nil, from a.fail).
func (s *Service) steppedUp(tx store.Tx, a *attempt, pr *Principal) (u *store.User, refused bool, err error) {
	if u, err = s.sessionUserTx(tx, pr); err != nil {
		return nil, false, err
	}
	a.of(u)
	if _, err := requireRecentAuth(tx, pr, s.now().UTC()); isAuthError(err) {
		return u, true, a.fail(tx, err)
	} else if err != nil {
		return u, false, err
	}
	return u, false, nil
}

// update runs fn in a write transaction, batch in one shared with other
// callers (group commit). The store may run fn more than once: each run
// starts from the attempt as it was before the first (its names, no
// failure), and a transaction that fails leaves no trace on it, so a
// reject after a rolled-back transaction names only what was known
// before. They return the transaction's error (result turns it into the
// use case's answer).
func (a *attempt) update(fn func(tx store.Tx) error) error { return a.run(a.s.db.Update, fn) }

// batch is update through the group commit (see update).
func (a *attempt) batch(fn func(tx store.Tx) error) error { return a.run(a.s.db.Batch, fn) }

// run runs fn through txn (Update or Batch), as update says. A run that
// queued a message not rendered before it (errUnrendered) is rolled
// back; the message is rendered outside the transaction and fn runs
// again (mailbox.go).
func (a *attempt) run(txn func(context.Context, func(store.Tx) error) error, fn func(store.Tx) error) error {
	for renders := 0; ; renders++ {
		err := a.runOnce(txn, fn)
		if a.mail == nil || !errors.Is(err, errUnrendered) {
			return err
		}
		if err := a.renderUnrendered(renders); err != nil {
			return err
		}
	}
}

// runOnce runs fn once through txn (see update).
func (a *attempt) runOnce(txn func(context.Context, func(store.Tx) error) error, fn func(store.Tx) error) error {
	before := *a
	err := txn(a.ctx, func(tx store.Tx) error {
		*a = before
		return fn(tx)
	})
	if err != nil {
		*a = before
	}
	return err
}

// result is the use case's answer once its transaction returned err: a
// store failure as INTERNAL_ERROR, else the failure recorded with fail,
// else nil.
func (a *attempt) result(err error) error {
	if err != nil {
		return internal(err)
	}
	return a.failure
}

// reserveRisk takes the verification's velocity slot for who
// (Service.reserveRisk): RISK_BLOCKED, or nil and the slot held until
// release, which settles it with the failure the attempt's commit marked.
func (a *attempt) reserveRisk(p *store.Project, who subject) error {
	slot, err := a.s.reserveRisk(a.ctx, p, a.m, who)
	if err != nil {
		return err
	}
	a.risk = slot
	return nil
}

// release settles the slot of reserveRisk (none: a no-op).
func (a *attempt) release() { a.s.releaseRisk(a.ctx, a.risk) }

// record writes the attempt's event inside tx. A nil fail is a success;
// otherwise its category is the event's failureCode. A wrong guess at a
// login verification marks the risk slot failed once tx commits. A
// failure that names no user may be suppressed (suppress.go): then it is
// only counted, once tx commits.
func (a *attempt) record(tx store.Tx, fail error) error {
	s := a.s
	e := a.event(fail)
	if slot := a.velocitySlot(fail); slot != nil {
		tx.OnCommit(func() { slot.failed = true })
	}
	tx.OnCommit(func() { s.observe(e) })
	if s.suppressed(e) {
		tx.OnCommit(func() { s.suppress.count(e) })
		return nil
	}
	return tx.AddAuthEvent(e)
}

// reject records fail in its own transaction and returns it: the
// attempt changed nothing else. A suppressed failure is only counted: no
// transaction at all.
func (a *attempt) reject(fail error) error {
	s := a.s
	e := a.event(fail)
	slot := a.velocitySlot(fail)
	if s.suppressed(e) {
		if slot != nil {
			slot.failed = true
		}
		s.suppress.count(e)
		s.observe(e)
		return fail
	}
	err := s.db.Batch(context.WithoutCancel(a.ctx), func(tx store.Tx) error {
		if slot != nil {
			tx.OnCommit(func() { slot.failed = true })
		}
		tx.OnCommit(func() { s.observe(e) })
		return tx.AddAuthEvent(e)
	})
	if err != nil && !errors.Is(err, store.ErrWriteFailed) { // the store logs those
		s.log.Error("record event", "err", err)
	}
	return fail
}

// velocitySlot returns the risk slot a failed outcome must mark failed:
// the attempt's when fail is a wrong guess at a login verification, else
// nil. A used or expired magic link is no guess: its token is real (only
// its owner's mail held it), and replaying one link must not let anyone
// block an address that many users share, such as a proxy's. Nor is a
// provider's one-time code refused for its codeVerifier: a page that
// makes browsers open captured callback URLs must not block them.
func (a *attempt) velocitySlot(fail error) *riskSlot {
	if fail == nil || a.risk == nil || !countsForVelocity(a.method, a.action) || !isVerifyFailure(AsError(fail)) {
		return nil
	}
	if errors.Is(fail, ErrLinkUsed) || errors.Is(fail, ErrLinkExpired) || errors.Is(fail, ErrCodeNotBound) {
		return nil
	}
	return a.risk
}

// event is the attempt's event for an outcome (fail nil: a success).
func (a *attempt) event(fail error) *store.AuthEvent {
	m := a.m
	e := &store.AuthEvent{ID: uuid.NewString(), ProjectID: a.projectID, UserID: a.userID, Email: a.email,
		Method: a.method, Action: a.action, Success: fail == nil, IP: m.IP, UserAgent: clipUA(m.UserAgent),
		CreatedAt: a.s.now().UTC()}
	if fail != nil {
		e.FailureCode = AsError(fail).Category
		if e.FailureCode == "" {
			e.FailureCode = CatInternal
		}
	}
	return e
}

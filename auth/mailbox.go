package auth

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"latchkey/store"
)

// Mail is rendered before the write transaction that queues it opens. A
// project's template runs outside every transaction, so a slow template
// holds no lock: bbolt has a single writer, and PostgreSQL keeps a
// transaction's row locks until it commits, so a render inside one would
// hold up other projects' writes.
//
// A use case that knows what its message says before its transaction
// renders it first (attempt.prepareMail: an OTP or a magic link, an
// address code). Its transaction queues the message with
// attempt.queueMail, which takes it only when it was rendered from
// exactly what the transaction would queue (project, kind, recipient and
// content: the project's name, the code, the link); otherwise the run
// ends with errUnrendered and is rolled back, the message is rendered
// from what that run asked for, and the transaction runs again
// (attempt.run). A use case whose message depends on what its
// transaction reads (the notice to an address that was just replaced)
// calls attempt.expectMail and lets its first run ask. A project renamed
// or an address changed between the render and the transaction means one
// more render, never a message with stale content.
//
// The template itself is read in a short read transaction just before
// the render, and not again: one changed or deleted between the render
// and the commit is harmless, the message is the one a send a moment
// earlier would have queued.

// errUnrendered ends a run of a transaction that queued a message not
// rendered before it: attempt.run renders it and runs the transaction
// again.
var errUnrendered = errors.New("auth: mail not rendered before its transaction")

// maxMailRenders bounds the renders between runs of one use case's
// transaction: when the content of its message still changed after them
// (a project renamed again and again), the next run queues the message
// unrendered, in the built-in English, which package mail renders when
// it sends.
const maxMailRenders = 2

// letter is one message of a use case, rendered before the transaction
// that queues it.
type letter struct {
	projectID, kind, to string
	says                store.MailContent // the content asked for, unrendered
	sealed              []byte            // says with its rendering, sealed; nil until rendered
}

// mailbox holds the letters of one attempt, across the runs of its
// transaction.
type mailbox struct {
	locale  string
	letters []*letter
	plain   bool // the last run: queue what is asked, in the built-in wording
}

// find returns the letter of (projectID, kind, to, says), or nil.
func (mb *mailbox) find(projectID, kind, to string, says store.MailContent) *letter {
	for _, l := range mb.letters {
		if l.projectID == projectID && l.kind == kind && l.to == to && l.says == says {
			return l
		}
	}
	return nil
}

// expectMail readies the attempt for a transaction that queues mail
// (queueMail). Call it before the transaction runs.
func (a *attempt) expectMail() {
	if a.mail == nil {
		a.mail = &mailbox{locale: a.m.Locale}
	}
}

// prepareMail renders, before the attempt's transaction, the message of
// kind to to that says says, for the transaction to queue (queueMail).
// Its error is the store's (reading the template).
func (a *attempt) prepareMail(projectID, kind, to string, says store.MailContent) error {
	a.expectMail()
	if a.mail.find(projectID, kind, to, says) != nil {
		return nil
	}
	l := &letter{projectID: projectID, kind: kind, to: to, says: says}
	a.mail.letters = append(a.mail.letters, l)
	return a.s.renderLetter(a.ctx, a.mail.locale, l)
}

// queueMail queues, inside tx, the message of kind to to that says says,
// as rendered before the transaction, and wakes the mail task once tx
// commits. A message not rendered yet ends the run with errUnrendered
// (see attempt.run).
func (a *attempt) queueMail(tx store.Tx, projectID, kind, to string, says store.MailContent, now time.Time) error {
	mb := a.mail
	if mb == nil {
		return errors.New("auth: mail queued by a use case that did not expect it (expectMail)")
	}
	l := mb.find(projectID, kind, to, says)
	if l == nil {
		l = &letter{projectID: projectID, kind: kind, to: to, says: says}
		mb.letters = append(mb.letters, l)
	}
	if l.sealed == nil {
		if !mb.plain {
			return errUnrendered
		}
		sealed, err := a.s.sealMail(says)
		if err != nil {
			return err
		}
		l.sealed = sealed
	}
	if err := tx.EnqueueMail(&store.Mail{ProjectID: projectID, To: to, Kind: kind, Body: l.sealed, CreatedAt: now, NextAttemptAt: now}); err != nil {
		return err
	}
	tx.OnCommit(a.s.wake)
	return nil
}

// renderUnrendered renders the letters a run asked for, or readies the
// last run (plain) once renders reached maxMailRenders.
func (a *attempt) renderUnrendered(renders int) error {
	if renders >= maxMailRenders {
		a.mail.plain = true
		return nil
	}
	for _, l := range a.mail.letters {
		if l.sealed == nil {
			if err := a.s.renderLetter(a.ctx, a.mail.locale, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// renderLetter renders l with the project's template of its kind for the
// first locale of locale's chain that has one, read in a short read
// transaction, then renders and seals it outside any transaction.
// Without a template, l is sealed as it is: package mail renders the
// built-in English when it sends. A template that does not render (one
// stored by an older version, or past a limit on this data) is logged
// and the built-in is sent: a send never fails, nor waits, on a
// template. Its error is the store's.
func (s *Service) renderLetter(ctx context.Context, locale string, l *letter) error {
	var t *store.Template
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		t, err = lookupTemplate(tx, l.projectID, l.kind, locale)
		return err
	})
	if err != nil {
		return err
	}
	body := l.says
	if t != nil {
		s.rendering()
		if r, err := renderStored(t, dataOf(l.to, l.says)); err != nil {
			s.log.Warn("mail template does not render: the built-in wording is sent",
				"project_id", l.projectID, "kind", t.Kind, "locale", t.Locale, "err", AsError(err).Message)
		} else {
			body.Subject, body.Text, body.HTML, body.Locale = r.Subject, r.Text, r.HTML, t.Locale
		}
	}
	l.sealed, err = s.sealMail(body)
	return err
}

// sealMail seals a message's content for the queue.
func (s *Service) sealMail(c store.MailContent) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return s.keys.Seal(body, store.MailAAD)
}

// rendering is called as a template render starts (tests set
// Service.onRender to check that no transaction is open then).
func (s *Service) rendering() {
	if s.onRender != nil {
		s.onRender()
	}
}

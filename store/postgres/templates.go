package postgres

import (
	"sync"
	"sync/atomic"
	"time"

	"latchkey/store"
)

// Mail templates (mail_templates, migration 0008): one row per (project,
// kind, locale).

const templateCols = `project_id, kind, locale, subject, body_text, body_html, updated_at`

// templateDest returns the scan destinations of templateCols in t.
func templateDest(t *store.Template) []any {
	return []any{&t.ProjectID, &t.Kind, &t.Locale, &t.Subject, &t.Text, &t.HTML, timeDest(&t.UpdatedAt)}
}

// Template returns projectID's template of kind in locale, from the
// project's templates as this replica read them at most templateTTL ago
// (templateCache): every mail sent reads its project's templates, through
// a locale chain, and they change rarely.
func (tx *txn) Template(projectID, kind, locale string) (*store.Template, error) {
	if !validText(projectID) || !validText(kind) || !validText(locale) {
		return nil, store.ErrNotFound
	}
	c := tx.db.templateCache()
	all, ok := c.get(projectID)
	if tx.wroteTemplates {
		// Its own writes, not yet committed: never kept.
		all, ok = nil, false
		c = nil
	}
	if !ok {
		var err error
		if all, err = tx.Templates(projectID); err != nil {
			return nil, err
		}
		if c != nil {
			// Kept unless a drop came since this transaction began: its
			// snapshot may be older than the read.
			c.put(projectID, all, tx.templateGen)
		}
	}
	for _, t := range all {
		if t.Kind == kind && t.Locale == locale {
			cp := *t
			return &cp, nil
		}
	}
	return nil, store.ErrNotFound
}

// templateTTL is how long a replica answers Template from the templates
// it read: a change made on another replica reaches its mail within it
// (this replica's own changes at once).
const templateTTL = time.Second

// templateCacheSize bounds the projects whose templates are kept.
const templateCacheSize = 10_000

// templates keeps each project's templates as read, for templateTTL.
type templates struct {
	now func() time.Time // time.Now; tests set it

	gen atomic.Uint64 // counts drops: a read older than a drop is not kept

	mu      sync.Mutex
	entries map[string]templateEntry
}

// templateEntry is one project's templates and when they were read.
type templateEntry struct {
	all []*store.Template
	at  time.Time
}

// templateCache returns the DB's cache, made on first use.
func (db *DB) templateCache() *templates {
	db.templatesOnce.Do(func() {
		if db.templates == nil {
			db.templates = &templates{now: time.Now}
		}
	})
	return db.templates
}

// get returns projectID's templates when they were read within
// templateTTL.
func (c *templates) get(projectID string) ([]*store.Template, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[projectID]
	if !ok || c.now().Sub(e.at) >= templateTTL {
		return nil, false
	}
	return e.all, true
}

// generation returns the count of drops; a transaction reads it as it
// begins (before its snapshot).
func (c *templates) generation() uint64 { return c.gen.Load() }

// put keeps projectID's templates, read in a transaction that began when
// the count of drops was gen, unless a drop came since (the read's
// snapshot may predate it).
func (c *templates) put(projectID string, all []*store.Template, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if c.entries == nil || len(c.entries) >= templateCacheSize {
		c.entries = map[string]templateEntry{}
	}
	c.entries[projectID] = templateEntry{all: all, at: c.now()}
}

// drop forgets projectID's templates.
func (c *templates) drop(projectID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	delete(c.entries, projectID)
}

// changedTemplates has this replica read projectID's templates again
// once tx commits.
func (tx *txn) changedTemplates(projectID string) {
	tx.wroteTemplates = true
	c := tx.db.templateCache()
	c.drop(projectID) // a read racing this transaction is not kept
	tx.OnCommit(func() { c.drop(projectID) })
}

// Templates returns projectID's templates in (Kind, Locale) byte order;
// never nil.
func (tx *txn) Templates(projectID string) ([]*store.Template, error) {
	if !validText(projectID) {
		return []*store.Template{}, nil
	}
	out, err := scanAll(tx, `SELECT `+templateCols+` FROM mail_templates WHERE project_id = $1 ORDER BY kind, locale`,
		[]any{projectID}, templateDest)
	if out == nil {
		out = []*store.Template{}
	}
	return out, err
}

// PutTemplate creates or replaces the template (t.ProjectID, t.Kind,
// t.Locale).
func (tx *txn) PutTemplate(t *store.Template) error {
	_, err := tx.exec(`INSERT INTO mail_templates (`+templateCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (project_id, kind, locale) DO UPDATE SET subject = excluded.subject,
			body_text = excluded.body_text, body_html = excluded.body_html, updated_at = excluded.updated_at`,
		t.ProjectID, t.Kind, t.Locale, t.Subject, t.Text, t.HTML, timeArg(t.UpdatedAt))
	tx.changedTemplates(t.ProjectID)
	if err != nil {
		return err
	}
	// Replicas: other replicas' caches of the texts drop them (feed.go).
	return tx.changed(store.ChangeTemplates, t.ProjectID)
}

// DeleteTemplate removes the template (projectID, kind, locale).
func (tx *txn) DeleteTemplate(projectID, kind, locale string) error {
	if !validText(projectID) || !validText(kind) || !validText(locale) {
		return nil
	}
	_, err := tx.exec(`DELETE FROM mail_templates WHERE project_id = $1 AND kind = $2 AND locale = $3`, projectID, kind, locale)
	tx.changedTemplates(projectID)
	if err != nil {
		return err
	}
	return tx.changed(store.ChangeTemplates, projectID)
}

// FactorSummaries returns the factor summaries of userIDs in one
// statement: per id, its factors' kinds and statuses (primary key
// prefix), whether it has passkeys in projectID (passkeys_user) and a
// batch of backup codes (primary key).
func (tx *txn) FactorSummaries(projectID string, userIDs []string) (map[string]store.FactorSummary, error) {
	out := make(map[string]store.FactorSummary, len(userIDs))
	ids := make([]string, 0, len(userIDs))
	for _, id := range userIDs {
		if validText(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || !validText(projectID) {
		return out, nil
	}
	rows, err := tx.query(`SELECT u.id,
			ARRAY(SELECT f.kind FROM factors f WHERE f.user_id = u.id ORDER BY f.kind),
			ARRAY(SELECT f.status FROM factors f WHERE f.user_id = u.id ORDER BY f.kind),
			EXISTS (SELECT 1 FROM passkeys p WHERE p.user_id = u.id AND p.project_id = $1),
			EXISTS (SELECT 1 FROM backup_codes b WHERE b.user_id = u.id)
		FROM unnest($2::text[]) AS u(id)`, projectID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var kinds, statuses []string
		var s store.FactorSummary
		if err := rows.Scan(&id, &kinds, &statuses, &s.Passkeys, &s.BackupCodes); err != nil {
			return nil, err
		}
		for i, k := range kinds {
			if s.Factors == nil {
				s.Factors = map[string]string{}
			}
			if i < len(statuses) {
				s.Factors[k] = statuses[i]
			}
		}
		out[id] = s
	}
	return out, tx.note(unavailable(rows.Err()))
}

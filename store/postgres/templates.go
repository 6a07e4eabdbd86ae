package postgres

import (
	"latchkey/store"
)

// Mail templates (mail_templates, migration 0008): one row per (project,
// kind, locale).

const templateCols = `project_id, kind, locale, subject, body_text, body_html, updated_at`

// templateDest returns the scan destinations of templateCols in t.
func templateDest(t *store.Template) []any {
	return []any{&t.ProjectID, &t.Kind, &t.Locale, &t.Subject, &t.Text, &t.HTML, timeDest(&t.UpdatedAt)}
}

// Template returns projectID's template of kind in locale.
func (tx *txn) Template(projectID, kind, locale string) (*store.Template, error) {
	if !validText(projectID) || !validText(kind) || !validText(locale) {
		return nil, store.ErrNotFound
	}
	t := &store.Template{}
	err := tx.one(`SELECT `+templateCols+` FROM mail_templates WHERE project_id = $1 AND kind = $2 AND locale = $3`,
		[]any{projectID, kind, locale}, templateDest(t)...)
	if err != nil {
		return nil, err
	}
	return t, nil
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
	return err
}

// DeleteTemplate removes the template (projectID, kind, locale).
func (tx *txn) DeleteTemplate(projectID, kind, locale string) error {
	if !validText(projectID) || !validText(kind) || !validText(locale) {
		return nil
	}
	_, err := tx.exec(`DELETE FROM mail_templates WHERE project_id = $1 AND kind = $2 AND locale = $3`, projectID, kind, locale)
	return err
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

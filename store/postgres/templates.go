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

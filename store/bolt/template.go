package bolt

import (
	"bytes"

	"latchkey/store"
)

// FactorSummaries returns the factor summaries of userIDs: three point
// reads and one index seek per user, in this transaction.
func (tx txn) FactorSummaries(projectID string, userIDs []string) (map[string]store.FactorSummary, error) {
	out := make(map[string]store.FactorSummary, len(userIDs))
	for _, id := range userIDs {
		var s store.FactorSummary
		for _, kind := range []string{"totp", "sms"} {
			f, err := tx.Factor(id, kind)
			if err == store.ErrNotFound {
				continue
			} else if err != nil {
				return nil, err
			}
			if s.Factors == nil {
				s.Factors = map[string]string{}
			}
			s.Factors[kind] = f.Status
		}
		pks, err := tx.UserPasskeys(projectID, id)
		if err != nil {
			return nil, err
		}
		s.Passkeys = len(pks) > 0
		if _, err := tx.BackupCodes(id); err == nil {
			s.BackupCodes = true
		} else if err != store.ErrNotFound {
			return nil, err
		}
		out[id] = s
	}
	return out, nil
}

// templateKey is the key of (projectID, kind, locale) in bucketTemplates:
// the project's templates are one prefix, in (kind, locale) byte order.
func templateKey(projectID, kind, locale string) []byte {
	return compound(projectID, kind, locale)
}

// Template returns projectID's template of kind in locale.
func (tx txn) Template(projectID, kind, locale string) (*store.Template, error) {
	var t store.Template
	if err := tx.get(bucketTemplates, templateKey(projectID, kind, locale), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Templates returns projectID's templates in (Kind, Locale) byte order;
// never nil.
func (tx txn) Templates(projectID string) ([]*store.Template, error) {
	out := []*store.Template{}
	prefix := compound(projectID, "")
	c := tx.bucket(bucketTemplates).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var t store.Template
		if err := jsonDecode(v, &t); err != nil {
			return nil, err
		}
		out = append(out, &t)
	}
	return out, nil
}

// PutTemplate creates or replaces the template (t.ProjectID, t.Kind,
// t.Locale).
func (tx txn) PutTemplate(t *store.Template) error {
	return tx.put(bucketTemplates, templateKey(t.ProjectID, t.Kind, t.Locale), t)
}

// DeleteTemplate removes the template (projectID, kind, locale).
func (tx txn) DeleteTemplate(projectID, kind, locale string) error {
	return tx.del(bucketTemplates, templateKey(projectID, kind, locale))
}

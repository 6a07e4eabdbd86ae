package store

import (
	"bytes"
	"time"
)

// Template is a project's own wording of one kind of mail in one locale:
// Go templates for the subject, the text part and the
// HTML part, checked by the caller when uploaded. It is keyed by
// (ProjectID, Kind, Locale); Locale is a canonical BCP 47 tag ("pt-BR").
type Template struct {
	ProjectID string    `json:"projectId"`
	Kind      string    `json:"kind"`
	Locale    string    `json:"locale"`
	Subject   string    `json:"subject"`
	Text      string    `json:"text"`
	HTML      string    `json:"html"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// FactorSummary is what second factors a user has (Tx.FactorSummaries):
// the Status of each of its factors by Kind ("totp", "sms"), and whether
// it has passkeys in the project and a batch of backup codes.
type FactorSummary struct {
	Factors     map[string]string
	Passkeys    bool
	BackupCodes bool
}

// FactorSummaries returns the factor summaries of userIDs: three point
// reads and one index seek per user, in this transaction.
func (tx boltTx) FactorSummaries(projectID string, userIDs []string) (map[string]FactorSummary, error) {
	out := make(map[string]FactorSummary, len(userIDs))
	for _, id := range userIDs {
		var s FactorSummary
		for _, kind := range []string{"totp", "sms"} {
			f, err := tx.Factor(id, kind)
			if err == ErrNotFound {
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
		} else if err != ErrNotFound {
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
func (tx boltTx) Template(projectID, kind, locale string) (*Template, error) {
	var t Template
	if err := tx.get(bucketTemplates, templateKey(projectID, kind, locale), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Templates returns projectID's templates in (Kind, Locale) byte order;
// never nil.
func (tx boltTx) Templates(projectID string) ([]*Template, error) {
	out := []*Template{}
	prefix := compound(projectID, "")
	c := tx.bucket(bucketTemplates).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var t Template
		if err := jsonDecode(v, &t); err != nil {
			return nil, err
		}
		out = append(out, &t)
	}
	return out, nil
}

// PutTemplate creates or replaces the template (t.ProjectID, t.Kind,
// t.Locale).
func (tx boltTx) PutTemplate(t *Template) error {
	return tx.put(bucketTemplates, templateKey(t.ProjectID, t.Kind, t.Locale), t)
}

// DeleteTemplate removes the template (projectID, kind, locale).
func (tx boltTx) DeleteTemplate(projectID, kind, locale string) error {
	return tx.del(bucketTemplates, templateKey(projectID, kind, locale))
}

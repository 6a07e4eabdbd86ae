package store

import "time"

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

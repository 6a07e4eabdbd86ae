package store

import "time"

// Template is a project's own wording of one kind of mail in one locale:
// Go templates for the subject, the text part and the
// HTML part, checked by the caller when uploaded. It is keyed by
// (ProjectID, Kind, Locale); Locale is a canonical BCP 47 tag ("pt-BR").
//
// Kind TemplateKindPage holds instead the project's texts of its hosted
// pages in the locale: Text is a JSON object of text keys to plain
// strings, Subject and HTML are empty. They travel, are listed, cached
// and deleted with the mail templates.
type Template struct {
	ProjectID string    `json:"projectId"`
	Kind      string    `json:"kind"`
	Locale    string    `json:"locale"`
	Subject   string    `json:"subject"`
	Text      string    `json:"text"`
	HTML      string    `json:"html"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// TemplateKindPage is the Kind of a Template that holds a locale's texts
// of the hosted pages.
const TemplateKindPage = "page"

// FactorSummary is what second factors a user has (Tx.FactorSummaries):
// the Status of each of its factors by Kind ("totp", "sms"), and whether
// it has passkeys in the project and a batch of backup codes.
type FactorSummary struct {
	Factors     map[string]string
	Passkeys    bool
	BackupCodes bool
}

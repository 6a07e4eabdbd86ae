package store

import "time"

// Mail is a queued message. Body is sealed with the keyring because it
// carries a code or link; it is deleted once sent.
type Mail struct {
	ID            uint64    `json:"id"`
	ProjectID     string    `json:"projectId"`
	To            string    `json:"to"`
	Kind          string    `json:"kind"`
	Body          []byte    `json:"body"`
	Attempts      int       `json:"attempts"`
	LastError     string    `json:"lastError,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

// MailContent is what a queued message says, sealed into Mail.Body (the
// keyring's aad is MailAAD). Kind "otp" carries Code, kind "magic" Link.
type MailContent struct {
	Project    string `json:"project"`
	Code       string `json:"code,omitempty"`
	Link       string `json:"link,omitempty"`
	TTLSeconds int    `json:"ttlSeconds"`
	// NewEmailMasked is, in the notice of an address change mailed to
	// the old address, the new address masked ("j***@e***.com").
	NewEmailMasked string `json:"newEmailMasked,omitempty"`

	// Subject, Text and HTML, when Subject is set, are the message as
	// the project's template for Locale rendered it;
	// without them the mail package renders its built-in English.
	Subject string `json:"subject,omitempty"`
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`
	Locale  string `json:"locale,omitempty"`
}

// MailAAD binds sealed mail bodies to their purpose.
var MailAAD = []byte("mail")

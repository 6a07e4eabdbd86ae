package mail

import (
	"context"
	"errors"
)

// Transport delivers one rendered message.
type Transport interface {
	Send(ctx context.Context, m *Message) error
}

// PermanentError marks a failure of one message that retrying cannot
// fix (an SMTP 5xx reply to RCPT or DATA, such as an unknown mailbox).
// The queue drops such a message instead of retrying it. A failure the
// settings cause is a ConfigError instead.
type PermanentError struct{ Err error }

// Error is the underlying failure's text.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying failure.
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

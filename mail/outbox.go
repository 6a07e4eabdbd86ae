package mail

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// Outbox writes each message as an RFC 5322 .eml file (mode 0600) into
// Dir, for running without an SMTP server. Files appear atomically.
type Outbox struct {
	Dir string
}

// Send implements Transport.
func (o *Outbox) Send(_ context.Context, m *Message) error {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(o.Dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(m.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(o.Dir, fileName(m)))
}

// fileName is "<UTC time>-<id>.eml", safe as a file name.
func fileName(m *Message) string {
	id := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, m.ID)
	return m.Date.UTC().Format("20060102T150405.000000000Z") + "-" + id + ".eml"
}

package mail

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Outbox writes each message as an RFC 5322 .eml file (mode 0600) into
// Dir, for running without an SMTP server. Files appear atomically.
// Each file starts with the X-Latchkey-* headers (code or link first,
// then kind and project), which the dashboard's
// Outbox page reads with ReadOutbox.
type Outbox struct {
	Dir string
	// Log, when set, receives one line per message written, with its
	// recipient, kind, and code or link: the --mail-log development
	// aid. Without it nothing logged here holds a code or link.
	Log *slog.Logger
}

// The headers the Outbox adds to each file, before the message's own.
const (
	HeaderCode    = "X-Latchkey-Code"
	HeaderLink    = "X-Latchkey-Link"
	HeaderKind    = "X-Latchkey-Kind"
	HeaderProject = "X-Latchkey-Project"
)

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
	if _, err := f.Write(append(outboxHeaders(m), m.Bytes()...)); err != nil {
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
	if err := os.Rename(f.Name(), filepath.Join(o.Dir, fileName(m))); err != nil {
		return err
	}
	if o.Log != nil {
		args := []any{"to", m.To, "kind", m.Kind}
		switch {
		case m.Code != "":
			args = append(args, "code", m.Code)
		case m.Link != "":
			args = append(args, "link", m.Link)
		}
		o.Log.Info("mail-log", append(args, "project_id", m.ProjectID)...)
	}
	return nil
}

// outboxHeaders returns the X-Latchkey-* header lines the Outbox writes
// before m's own headers: the code (so that it stays the first run of
// six digits in the file) or the link, then the kind and the project
// id. Empty values are left out; control characters are dropped.
func outboxHeaders(m *Message) []byte {
	var b bytes.Buffer
	for _, h := range [][2]string{{HeaderCode, m.Code}, {HeaderLink, m.Link}, {HeaderKind, m.Kind}, {HeaderProject, m.ProjectID}} {
		if v := strings.TrimSpace(headerSafe(h[1])); v != "" {
			b.WriteString(h[0] + ": " + v + "\r\n")
		}
	}
	return b.Bytes()
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

package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"strings"
	"time"
)

// Message is one rendered email.
type Message struct {
	// ID names the message in the queue (used for the outbox file name and
	// the Message-ID header); it carries no secret.
	ID      string
	From    string
	To      string
	Subject string
	Text    string
	HTML    string
	Date    time.Time
}

// Bytes renders m as an RFC 5322 message: multipart/alternative with a
// quoted-printable text part and HTML part. Header values are stripped of
// control characters so no input can add a header.
func (m *Message) Bytes() []byte {
	var b bytes.Buffer
	boundary := randomHex(16)
	header := func(k, v string) {
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteString("\r\n")
	}
	header("From", headerSafe(m.From))
	header("To", headerSafe(m.To))
	header("Subject", mime.QEncoding.Encode("utf-8", headerSafe(m.Subject)))
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	header("Date", date.UTC().Format(time.RFC1123Z))
	id := randomHex(12)
	if m.ID != "" {
		id = headerSafe(m.ID) + "." + id
	}
	header("Message-ID", "<"+id+"@latchkey>")
	header("MIME-Version", "1.0")
	header("Auto-Submitted", "auto-generated")
	header("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	part := func(ctype, body string) {
		fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", boundary, ctype)
		w := quotedprintable.NewWriter(&b)
		w.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n")))
		w.Close()
		b.WriteString("\r\n")
	}
	part("text/plain", m.Text)
	part("text/html", m.HTML)
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes()
}

// headerSafe drops control characters (CR and LF above all) from a header
// value.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

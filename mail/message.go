package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one rendered email.
type Message struct {
	// ID names the message in the queue (used for the outbox file name);
	// it carries no secret.
	ID      string
	From    string
	To      string
	Subject string
	Text    string
	HTML    string
	Date    time.Time

	// What the queue knows of the message beyond its bytes: the project
	// it is sent for, its kind (KindOTP...) and the code or link it
	// carries. Bytes never writes them, so an SMTP server never sees
	// them; the Outbox writes them as X-Latchkey-* headers for the
	// dashboard's Outbox page.
	ProjectID, Kind, Code, Link string
}

// Bytes renders m as an RFC 5322 message: multipart/alternative with a
// text part and an HTML part. A part that is plain ASCII with short lines
// goes as 7bit, so the code and the link stand in the raw message exactly
// as the user sees them (a script reading the .eml outbox can grep them);
// so does a text part in UTF-8 with such lines (a project's template in
// another language), as 8bit (RFC 6152; the SMTP client asks for
// BODY=8BITMIME where the server offers it), since quoted-printable would
// encode a link's "=" and may break a code across a soft line break; any
// other part is quoted-printable. The boundary and Message-ID are
// letters only, so the code is the only run of digits in the message.
// Header values are stripped of control characters so no input can add a
// header.
func (m *Message) Bytes() []byte {
	var b bytes.Buffer
	boundary := "=_" + randomLetters(24)
	header := func(k, v string) {
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteString("\r\n")
	}
	header("From", headerSafe(m.From))
	header("To", headerSafe(m.To))
	header("Subject", encodeSubject(headerSafe(m.Subject)))
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	header("Date", date.UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+randomLetters(24)+"@latchkey>")
	header("MIME-Version", "1.0")
	header("Auto-Submitted", "auto-generated")
	header("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	part := func(ctype, body string) {
		body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
		if is7bit(body) {
			fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n", boundary, ctype)
			b.WriteString(body)
		} else if ctype == "text/plain" && is8bit(body) {
			fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n", boundary, ctype)
			b.WriteString(body)
		} else {
			fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", boundary, ctype)
			w := quotedprintable.NewWriter(&b)
			w.Write([]byte(body))
			w.Close()
		}
		b.WriteString("\r\n")
	}
	part("text/plain", m.Text)
	part("text/html", m.HTML)
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes()
}

// encodeSubject encodes a subject for the header: as RFC 2047 Q words
// when it needs encoding, and as base64 words whenever it holds "=?", so
// a project name can never be read as an encoded word of its own.
func encodeSubject(s string) string {
	if !strings.Contains(s, "=?") {
		return mime.QEncoding.Encode("utf-8", s)
	}
	var words []string
	for len(s) > 0 {
		n := min(45, len(s)) // 45 bytes make a 75-character word
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			n = min(45, len(s))
		}
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, "\r\n ")
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

// is7bit reports whether body (CRLF line ends) may go unencoded: ASCII
// printable characters and tabs, lines within RFC 5322's 998 characters,
// no line that starts with "--" (it could be read as a boundary), and no
// trailing white space that a relay might strip.
func is7bit(body string) bool {
	for _, line := range strings.Split(body, "\r\n") {
		if len(line) > 998 || strings.HasPrefix(line, "--") || strings.HasSuffix(line, " ") || strings.HasSuffix(line, "\t") {
			return false
		}
		for i := 0; i < len(line); i++ {
			if c := line[i]; (c < 0x20 && c != '\t') || c > 0x7e {
				return false
			}
		}
	}
	return true
}

// is8bit is is7bit for UTF-8 text: valid UTF-8 without control
// characters other than tab, under is7bit's rules for lines.
func is8bit(body string) bool {
	if !utf8.ValidString(body) {
		return false
	}
	for _, line := range strings.Split(body, "\r\n") {
		if len(line) > 998 || strings.HasPrefix(line, "--") || strings.HasSuffix(line, " ") || strings.HasSuffix(line, "\t") {
			return false
		}
		for _, r := range line {
			if (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
				return false
			}
		}
	}
	return true
}

// randomLetters returns n random lowercase letters.
func randomLetters(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

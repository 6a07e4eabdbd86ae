package mail_test

import (
	"bufio"
	"bytes"
	"net/mail"
	"os"
	"strconv"
	"strings"
	"testing"

	lmail "latchkey/mail"
	"latchkey/store"
)

// FuzzRender: whatever project name, code or link the store hands over,
// the message parses, has exactly the headers we write, and the subject
// carries no control characters.
func FuzzRender(f *testing.F) {
	f.Add("Acme", "123456", "https://a.example/api/v1/magic/verify?token=x", 600)
	f.Add("Evil\r\nBcc: victim@example.com", "1", "javascript:alert(1)", 0)
	f.Add("Zürich — 東京", "", "", 3600)
	f.Add(strings.Repeat("x", 500), "\x00", "\n", 59)
	// Project-name seeds live in testdata/mail (escapes like \r\n unquoted).
	file, err := os.Open("../testdata/mail/projects.txt")
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		name := sc.Text()
		if u, err := strconv.Unquote(`"` + name + `"`); err == nil {
			name = u
		}
		f.Add(name, "123456", "https://a.example/x?token=y", 600)
	}
	f.Fuzz(func(t *testing.T, project, code, link string, ttl int) {
		for _, kind := range []string{lmail.KindOTP, lmail.KindMagic, lmail.KindEmailChange, lmail.KindEmailChangedNotice} {
			m, err := lmail.Render(kind, "user@example.com", "auth@example.com", store.MailContent{Project: project, Code: code, Link: link, TTLSeconds: ttl})
			if err != nil {
				t.Fatal(err)
			}
			data := m.Bytes()
			msg, err := mail.ReadMessage(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("unparsable: %v", err)
			}
			if len(msg.Header) != 8 || msg.Header.Get("Bcc") != "" || msg.Header.Get("To") != "user@example.com" {
				t.Fatalf("headers %v", msg.Header)
			}
			if strings.ContainsAny(m.Subject, "\r\n") && strings.ContainsAny(msg.Header.Get("Subject"), "\r\n") {
				t.Fatal("control characters in the subject header")
			}
			parseMessage(t, data)
		}
	})
}

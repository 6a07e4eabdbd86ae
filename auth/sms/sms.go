// Package sms holds latchkey's SMS providers: "log" for development and
// "twilio" (the Messages API). Provider "none" is no sender at all.
package sms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Log writes each message to the log and, when Dir is set, to a file in
// Dir (the development outbox). It never fails a send for the log line.
type Log struct {
	Logger *slog.Logger
	Dir    string
}

// SendSMS implements auth.SMSSender.
func (l *Log) SendSMS(_ context.Context, to, body string) error {
	l.Logger.Info("sms (log provider)", "to", to, "body", body)
	if l.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return err
	}
	name := filepath.Join(l.Dir, time.Now().UTC().Format("20060102T150405.000000000")+"-"+randHex()+".sms.txt")
	return os.WriteFile(name, []byte("To: "+to+"\n\n"+body+"\n"), 0o600)
}

func randHex() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Twilio sends through Twilio's Messages API with basic auth.
type Twilio struct {
	AccountSID string
	AuthToken  string
	From       string
	// BaseURL is scheme, host and port (default https://api.twilio.com).
	BaseURL string
	Client  *http.Client
}

// NewTwilio returns a Twilio sender from the LATCHKEY_TWILIO_* settings.
func NewTwilio(sid, token, from, baseURL string) (*Twilio, error) {
	if sid == "" || token == "" || from == "" {
		return nil, errors.New("twilio needs LATCHKEY_TWILIO_ACCOUNT_SID, LATCHKEY_TWILIO_AUTH_TOKEN and LATCHKEY_TWILIO_FROM")
	}
	if baseURL == "" {
		baseURL = "https://api.twilio.com"
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, errors.New("LATCHKEY_TWILIO_BASE_URL must be scheme://host[:port]")
	}
	return &Twilio{AccountSID: sid, AuthToken: token, From: from, BaseURL: strings.TrimSuffix(baseURL, "/"),
		Client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// SendSMS implements auth.SMSSender. Errors name the status and Twilio's
// error code, never the credentials.
func (t *Twilio) SendSMS(ctx context.Context, to, body string) error {
	endpoint := t.BaseURL + "/2010-04-01/Accounts/" + url.PathEscape(t.AccountSID) + "/Messages.json"
	form := url.Values{"To": {to}, "From": {t.From}, "Body": {body}}
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return errors.New("twilio: bad request")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(t.AccountSID, t.AuthToken)
	res, err := t.Client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // drop the URL, which names the account
		}
		return fmt.Errorf("twilio: %w", err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("twilio: status %d: %s", res.StatusCode, twilioCode(data))
	}
	return nil
}

// twilioCode extracts Twilio's numeric error code from an error body.
func twilioCode(body []byte) string {
	s := string(body)
	i := strings.Index(s, `"code":`)
	if i < 0 {
		return "no error code"
	}
	s = strings.TrimSpace(s[i+7:])
	end := strings.IndexAny(s, ",}")
	if end < 0 {
		return "no error code"
	}
	return "code " + strings.TrimSpace(s[:end])
}

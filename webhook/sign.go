package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names set on every delivery.
const (
	HeaderSignature = "X-Service-Signature"
	HeaderEventID   = "X-Service-Event-Id"
	HeaderAttempt   = "X-Service-Delivery-Attempt"

	// Standard Webhooks (https://www.standardwebhooks.com).
	HeaderStdID        = "Webhook-Id"
	HeaderStdTimestamp = "Webhook-Timestamp"
	HeaderStdSignature = "Webhook-Signature"
)

// UserAgent is the User-Agent of every delivery.
const UserAgent = "latchkey-webhook/1"

// DefaultTolerance is how far a webhook-timestamp may be from the receiver's
// clock when VerifyStandard is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// Errors returned by VerifyStandard.
var (
	ErrInvalidKey    = errors.New("webhook: key is not whsec_<base64>")
	ErrMissingHeader = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrTimestamp     = errors.New("webhook: timestamp invalid or outside tolerance")
	ErrSignature     = errors.New("webhook: no matching signature")
)

// Sign returns the X-Service-Signature of body: the hex HMAC-SHA256 of body
// keyed by the ASCII bytes of secret (not its hex-decoded bytes).
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature, an X-Service-Signature header, is the
// hex HMAC-SHA256 of body keyed by secret. It compares in constant time.
func Verify(secret string, body []byte, signature string) bool {
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// StandardSignature returns the Standard Webhooks signature of a delivery:
// "v1," followed by the base64 HMAC-SHA256 of "id.ts.body" keyed by key.
func StandardSignature(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// StandardKey returns the key a receiver gives a Standard Webhooks library
// to verify deliveries signed with secret: "whsec_" and the base64 of the
// secret's ASCII bytes.
func StandardKey(secret string) string {
	return "whsec_" + base64.StdEncoding.EncodeToString([]byte(secret))
}

// Headers returns the headers of one delivery attempt of the event eventID
// with body, signed with secret at time ts. The attempt counts from 1.
func Headers(secret, eventID string, attempt int, ts time.Time, body []byte) http.Header {
	unix := ts.Unix()
	h := make(http.Header, 8)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderSignature, Sign(secret, body))
	h.Set(HeaderEventID, eventID)
	h.Set(HeaderAttempt, strconv.Itoa(attempt))
	h.Set(HeaderStdID, eventID)
	h.Set(HeaderStdTimestamp, strconv.FormatInt(unix, 10))
	h.Set(HeaderStdSignature, StandardSignature([]byte(secret), eventID, unix, body))
	return h
}

// VerifyStandard checks a delivery the way a Standard Webhooks receiver
// does: key is "whsec_<base64>" (the prefix may be omitted), header holds
// webhook-id, webhook-timestamp and webhook-signature (one or more
// space-separated "v1,<base64>"), and body is the raw request body. The
// timestamp must lie within tolerance of now (DefaultTolerance if tolerance
// is not positive), which rejects replays.
//
// It returns nil or one of ErrInvalidKey, ErrMissingHeader, ErrTimestamp
// and ErrSignature.
func VerifyStandard(key string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(key, "whsec_"))
	if err != nil || len(k) == 0 {
		return ErrInvalidKey
	}
	id := header.Get(HeaderStdID)
	tsText := header.Get(HeaderStdTimestamp)
	sigs := header.Get(HeaderStdSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeader
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sec, tol := now.Unix(), int64(tolerance/time.Second)
	if ts < sec-tol || ts > sec+tol {
		return ErrTimestamp
	}
	want := []byte(StandardSignature(k, id, ts, body))
	for sig := range strings.FieldsSeq(sigs) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrSignature
}

package bolt

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"latchkey/store"
)

// The bbolt backend stores most records as JSON (codec.go), which does
// not keep every byte of two kinds of field: a json.RawMessage comes back
// compacted (and an empty one cannot be written at all), a string that is
// not UTF-8 comes back with U+FFFD in place of its stray bytes. The
// records with such fields (Passkey, Challenge, Delivery) are written as
// their row types (passkeyRow, challengeRow, deliveryRow), which write
// such a field, when JSON would change it, as base64 bytes in a field of
// its own ("…Bytes"); rows written before read as they were.

// keptAsJSON reports whether raw, written as a JSON value, reads back byte
// for byte: it is JSON as encoding/json writes it (compact, HTML
// escaped), and not null (which reads back as nil).
func keptAsJSON(raw json.RawMessage) bool {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return false
	}
	out, err := json.Marshal(raw)
	return err == nil && bytes.Equal(out, raw)
}

// rawValue returns what a row's JSON value raw and its bytes field b (the
// form rawFields wrote) hold.
func rawValue(raw json.RawMessage, b []byte) json.RawMessage {
	if b != nil {
		return json.RawMessage(b)
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

// rawFields returns how a row writes raw: as a JSON value when that keeps
// it (keptAsJSON), else as null and bytes.
func rawFields(raw json.RawMessage) (json.RawMessage, []byte) {
	if raw == nil || keptAsJSON(raw) {
		return raw, nil
	}
	return nil, raw
}

// passkeyRow is a Passkey as a row of bucketPasskeys: its credential
// kept byte for byte (see keptAsJSON).
type passkeyRow store.Passkey

// MarshalJSON writes pk as the row stores it.
func (pk passkeyRow) MarshalJSON() ([]byte, error) {
	type plain store.Passkey
	row := struct {
		plain
		Credential      json.RawMessage `json:"credential"`
		CredentialBytes []byte          `json:"credentialBytes,omitempty"`
	}{plain: plain(pk)}
	row.Credential, row.CredentialBytes = rawFields(pk.Credential)
	return json.Marshal(row)
}

// UnmarshalJSON reads a row MarshalJSON wrote, or one written before it.
func (pk *passkeyRow) UnmarshalJSON(data []byte) error {
	type plain store.Passkey
	var row struct {
		plain
		Credential      json.RawMessage `json:"credential"`
		CredentialBytes []byte          `json:"credentialBytes"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	*pk = passkeyRow(row.plain)
	pk.Credential = rawValue(row.Credential, row.CredentialBytes)
	return nil
}

// challengeRow is a Challenge as a row of bucketChallenges: its session
// kept byte for byte (see keptAsJSON).
type challengeRow store.Challenge

// MarshalJSON writes c as the row stores it.
func (c challengeRow) MarshalJSON() ([]byte, error) {
	type plain store.Challenge
	row := struct {
		plain
		Session      json.RawMessage `json:"session"`
		SessionBytes []byte          `json:"sessionBytes,omitempty"`
	}{plain: plain(c)}
	row.Session, row.SessionBytes = rawFields(c.Session)
	return json.Marshal(row)
}

// UnmarshalJSON reads a row MarshalJSON wrote, or one written before it.
func (c *challengeRow) UnmarshalJSON(data []byte) error {
	type plain store.Challenge
	var row struct {
		plain
		Session      json.RawMessage `json:"session"`
		SessionBytes []byte          `json:"sessionBytes"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	*c = challengeRow(row.plain)
	c.Session = rawValue(row.Session, row.SessionBytes)
	return nil
}

// deliveryRow is a Delivery as a row of bucketDeliveries: an Error that
// is not UTF-8 (a receiver's answer may hold any bytes) kept as base64
// bytes.
type deliveryRow store.Delivery

// MarshalJSON writes d as the row stores it.
func (d deliveryRow) MarshalJSON() ([]byte, error) {
	type plain store.Delivery
	row := struct {
		plain
		ErrorBytes []byte `json:"errorBytes,omitempty"`
	}{plain: plain(d)}
	if !utf8.ValidString(d.Error) {
		row.plain.Error, row.ErrorBytes = "", []byte(d.Error)
	}
	return json.Marshal(row)
}

// UnmarshalJSON reads a row MarshalJSON wrote, or one written before it.
func (d *deliveryRow) UnmarshalJSON(data []byte) error {
	type plain store.Delivery
	var row struct {
		plain
		ErrorBytes []byte `json:"errorBytes"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	*d = deliveryRow(row.plain)
	if row.ErrorBytes != nil {
		d.Error = string(row.ErrorBytes)
	}
	return nil
}

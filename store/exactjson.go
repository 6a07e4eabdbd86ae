package store

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The bbolt backend stores most records as JSON (codec.go), which does
// not keep every byte of two kinds of field: a json.RawMessage comes back
// compacted (and an empty one cannot be written at all), a string that is
// not UTF-8 comes back with U+FFFD in place of its stray bytes. The
// records with such fields (Passkey, Challenge, Delivery) write them, when
// JSON would change them, as base64 bytes in a field of their own
// ("…Bytes"); rows written before read as they were.

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

// MarshalJSON writes pk as the bbolt backend stores it (see keptAsJSON).
func (pk Passkey) MarshalJSON() ([]byte, error) {
	type plain Passkey
	row := struct {
		plain
		Credential      json.RawMessage `json:"credential"`
		CredentialBytes []byte          `json:"credentialBytes,omitempty"`
	}{plain: plain(pk)}
	row.Credential, row.CredentialBytes = rawFields(pk.Credential)
	return json.Marshal(row)
}

// UnmarshalJSON reads a row MarshalJSON wrote, or one written before it.
func (pk *Passkey) UnmarshalJSON(data []byte) error {
	type plain Passkey
	var row struct {
		plain
		Credential      json.RawMessage `json:"credential"`
		CredentialBytes []byte          `json:"credentialBytes"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	*pk = Passkey(row.plain)
	pk.Credential = rawValue(row.Credential, row.CredentialBytes)
	return nil
}

// MarshalJSON writes c as the bbolt backend stores it (see keptAsJSON).
func (c Challenge) MarshalJSON() ([]byte, error) {
	type plain Challenge
	row := struct {
		plain
		Session      json.RawMessage `json:"session"`
		SessionBytes []byte          `json:"sessionBytes,omitempty"`
	}{plain: plain(c)}
	row.Session, row.SessionBytes = rawFields(c.Session)
	return json.Marshal(row)
}

// UnmarshalJSON reads a row MarshalJSON wrote, or one written before it.
func (c *Challenge) UnmarshalJSON(data []byte) error {
	type plain Challenge
	var row struct {
		plain
		Session      json.RawMessage `json:"session"`
		SessionBytes []byte          `json:"sessionBytes"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	*c = Challenge(row.plain)
	c.Session = rawValue(row.Session, row.SessionBytes)
	return nil
}

// MarshalJSON writes d as the bbolt backend stores it: an Error that is
// not UTF-8 (a receiver's answer may hold any bytes) as base64 bytes.
func (d Delivery) MarshalJSON() ([]byte, error) {
	type plain Delivery
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
func (d *Delivery) UnmarshalJSON(data []byte) error {
	type plain Delivery
	var row struct {
		plain
		ErrorBytes []byte `json:"errorBytes"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	*d = Delivery(row.plain)
	if row.ErrorBytes != nil {
		d.Error = string(row.ErrorBytes)
	}
	return nil
}

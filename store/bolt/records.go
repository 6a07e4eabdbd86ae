package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"time"

	"latchkey/store"
)

// Encoders and decoders of the compact records (see codec.go). A field
// that the row's key holds (a session's id, a device's key, a mail's or
// an outbox event's sequence number, a user's id) is not repeated in the
// value; decoders take the key.

func encodeUser(u *store.User) []byte {
	b := make([]byte, 0, 64+len(u.Email)+len(u.ExternalUserID)+len(u.FirstName)+len(u.CompanyID)+len(u.Metadata)+16*len(u.Groups))
	b = append(b, recordFormat)
	b = appendID(b, u.ProjectID)
	b = appendString(b, u.Email)
	b = appendString(b, u.ExternalUserID)
	b = appendString(b, u.FirstName)
	b = appendID(b, u.CompanyID)
	var flags byte
	if u.Disabled {
		flags |= 1
	}
	if u.EmailVerified != nil {
		flags |= 2
		if *u.EmailVerified {
			flags |= 4
		}
	}
	if u.Vouched != nil {
		flags |= 8
		if *u.Vouched {
			flags |= 16
		}
	}
	if u.Groups != nil {
		flags |= userGroups
	}
	if u.Metadata != nil {
		flags |= userMetadata
	}
	b = append(b, flags)
	b = appendTime(b, u.CreatedAt)
	b = appendTime(b, u.UpdatedAt)
	if u.Groups != nil {
		b = binary.AppendUvarint(b, uint64(len(u.Groups)))
		for _, g := range u.Groups {
			b = appendString(b, g)
		}
	}
	if u.Metadata != nil {
		b = appendBlob(b, u.Metadata)
	}
	return b
}

// The flags of a user row that say its groups and its metadata follow
// the times (in that order). A row written before them has neither
// flag, and the user neither field (nil).
const (
	userGroups   = 32
	userMetadata = 64
)

func decodeUser(k, v []byte) (*store.User, error) {
	u := &store.User{}
	done, d, err := decodeRecord(v, u)
	if err != nil || done {
		return u, err
	}
	u.ID = string(k)
	u.ProjectID = d.id()
	u.Email = d.string()
	u.ExternalUserID = d.string()
	u.FirstName = d.string()
	u.CompanyID = d.id()
	flags := d.byte()
	u.Disabled = flags&1 != 0
	if flags&2 != 0 {
		verified := flags&4 != 0
		u.EmailVerified = &verified
	}
	if flags&8 != 0 {
		vouched := flags&16 != 0
		u.Vouched = &vouched
	}
	u.CreatedAt = d.time()
	u.UpdatedAt = d.time()
	if flags&userGroups != 0 {
		n := d.uvarint()
		if n > uint64(len(d.b)) { // each group takes at least a byte
			d.bad = true
			n = 0
		}
		u.Groups = make([]string, 0, n)
		for range n {
			u.Groups = append(u.Groups, d.string())
		}
	}
	if flags&userMetadata != 0 {
		if u.Metadata = d.blob(); u.Metadata == nil {
			u.Metadata = json.RawMessage{}
		}
	}
	return u, d.done()
}

// sessionFormat is the first byte of a compact session row since
// sessions keep their proofs: the row of recordFormat without the slot
// that held the time of the last step-up (after ExpiresAt), with the
// proofs at the end (appendProofs). A recordFormat row is read as
// LegacyProofs says, and rewritten in this format when it next changes.
const sessionFormat = 2

// Every time of a session has a fixed place, so the minute's last-seen
// flush rewrites a row without growing it.
func encodeSession(s *store.Session) []byte {
	b := make([]byte, 0, 76+len(s.Method)+len(s.IP)+len(s.UserAgent)+10*len(s.Proofs))
	b = append(b, sessionFormat)
	b = appendID(b, s.UserID)
	b = appendID(b, s.ProjectID)
	b = appendString(b, s.Method)
	b = appendTime(b, s.IssuedAt)
	b = appendTime(b, s.ExpiresAt)
	b = appendTime(b, s.LastSeenAt)
	b = appendIP(b, s.IP)
	b = appendString(b, s.UserAgent)
	return appendProofs(b, s.Proofs, s.IssuedAt)
}

func decodeSession(k, v []byte) (*store.Session, error) {
	s := &store.Session{}
	switch {
	case isJSON(v):
		// Written before the compact encoding: the step-up time had a
		// field of its own.
		var j struct {
			store.Session
			SteppedUpAt time.Time `json:"steppedUpAt"`
		}
		if err := json.Unmarshal(v, &j); err != nil {
			return s, err
		}
		if j.Proofs == nil {
			j.Proofs = store.LegacyProofs(j.Method, j.IssuedAt, j.SteppedUpAt)
		}
		return &j.Session, nil
	case len(v) == 0 || (v[0] != sessionFormat && v[0] != recordFormat):
		return s, errBadRecord
	}
	legacy := v[0] == recordFormat
	d := &decoder{b: v[1:]}
	s.ID = string(k)
	s.UserID = d.id()
	s.ProjectID = d.id()
	s.Method = d.string()
	s.IssuedAt = d.time()
	s.ExpiresAt = d.time()
	var steppedUpAt time.Time
	if legacy {
		steppedUpAt = d.time()
	}
	s.LastSeenAt = d.time()
	s.IP = d.ip()
	s.UserAgent = d.string()
	if legacy {
		s.Proofs = store.LegacyProofs(s.Method, s.IssuedAt, steppedUpAt)
	} else {
		s.Proofs = d.proofs(s.IssuedAt)
	}
	return s, d.done()
}

// proofMethods are the methods a proof stores as one byte (its index);
// any other is stored as 0 and the string.
var proofMethods = [...]string{1: "otp", 2: "link", 3: "passkey", 4: "backup_code", 5: "totp", 6: "sms", 7: "external", 8: "mfa",
	proofSyncedPasskey: "passkey"}

// proofSyncedPasskey is the tag of a passkey proof whose passkey was
// synced (store.Proof.Synced); tag 3 is one bound to its authenticator.
const proofSyncedPasskey = 9

// appendProofs appends a session's proofs: their count, then each
// method (one byte, see proofMethods) and time, as the signed difference
// from base (the session's IssuedAt) in nanoseconds, a varint: a proof at
// sign-in takes two bytes.
func appendProofs(b []byte, ps []store.Proof, base time.Time) []byte {
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		tag := byte(0)
		for i, m := range proofMethods {
			if i > 0 && m == p.Method {
				tag = byte(i)
				break
			}
		}
		if p.Synced && p.Method == "passkey" {
			tag = proofSyncedPasskey
		}
		b = append(b, tag)
		if tag == 0 {
			b = appendString(b, p.Method)
		}
		b = binary.AppendVarint(b, nanos(p.At)-nanos(base))
	}
	return b
}

// proofs reads what appendProofs wrote; nil for none.
func (d *decoder) proofs(base time.Time) []store.Proof {
	n := d.uvarint()
	if n == 0 || d.bad {
		return nil
	}
	if n > uint64(len(d.b)/2) {
		d.bad = true
		return nil
	}
	out := make([]store.Proof, 0, n)
	for range n {
		var p store.Proof
		if tag := d.byte(); tag == 0 {
			p.Method = d.string()
		} else if int(tag) < len(proofMethods) {
			p.Method, p.Synced = proofMethods[tag], tag == proofSyncedPasskey
		} else {
			d.bad = true
		}
		delta, w := binary.Varint(d.b)
		if w <= 0 || d.bad {
			d.bad = true
			return nil
		}
		d.b = d.b[w:]
		if t := nanos(base) + delta; t != 0 {
			p.At = time.Unix(0, t).UTC()
		}
		out = append(out, p)
	}
	return out
}

// nanos is t in Unix nanoseconds, 0 for the zero time (as appendTime).
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func encodeCode(c *store.Code) []byte {
	b := make([]byte, 0, 64+len(c.Kind)+len(c.Subject)+len(c.Phone)+len(c.Email)+len(c.Hash))
	b = append(b, recordFormat)
	b = appendString(b, c.Kind)
	b = appendID(b, c.ProjectID)
	b = appendString(b, c.Subject)
	b = appendString(b, c.Phone)
	b = appendString(b, c.Email)
	b = appendBlob(b, c.Hash)
	b = binary.AppendUvarint(b, uint64(max(c.Attempts, 0)))
	b = appendTime(b, c.CreatedAt)
	return appendTime(b, c.ExpiresAt)
}

func decodeCode(v []byte) (*store.Code, error) {
	c := &store.Code{}
	done, d, err := decodeRecord(v, c)
	if err != nil || done {
		return c, err
	}
	c.Kind = d.string()
	c.ProjectID = d.id()
	c.Subject = d.string()
	c.Phone = d.string()
	c.Email = d.string()
	c.Hash = d.blob()
	c.Attempts = int(d.uvarint())
	c.CreatedAt = d.time()
	c.ExpiresAt = d.time()
	return c, d.done()
}

func encodeThrottle(t *store.Throttle) []byte {
	b := make([]byte, 0, 12+8*len(t.Sends))
	b = append(b, recordFormat)
	b = binary.AppendUvarint(b, uint64(len(t.Sends)))
	for _, s := range t.Sends {
		b = appendTime(b, s)
	}
	return appendTime(b, t.KeepUntil)
}

func decodeThrottle(v []byte) (*store.Throttle, error) {
	t := &store.Throttle{}
	done, d, err := decodeRecord(v, t)
	if err != nil || done {
		return t, err
	}
	n := d.uvarint()
	if n > uint64(len(d.b)/8) {
		return nil, errBadRecord
	}
	t.Sends = make([]time.Time, n)
	for i := range t.Sends {
		t.Sends[i] = d.time()
	}
	t.KeepUntil = d.time()
	return t, d.done()
}

func encodeDevice(dv *store.Device) []byte {
	b := make([]byte, 0, 96+len(dv.Hash))
	b = append(b, recordFormat)
	b = appendBlob(b, dv.Hash)
	b = appendID(b, dv.UserID)
	b = appendID(b, dv.ProjectID)
	b = appendTime(b, dv.CreatedAt)
	return appendTime(b, dv.LastUsedAt)
}

func decodeDevice(k, v []byte) (*store.Device, error) {
	dv := &store.Device{}
	done, d, err := decodeRecord(v, dv)
	if err != nil {
		return nil, err
	}
	if done {
		// Written before devices expired: last used when created.
		dv.LastUsedAt = dv.CreatedAt
		return dv, nil
	}
	dv.Key = clone(k)
	dv.Hash = d.blob()
	dv.UserID = d.id()
	dv.ProjectID = d.id()
	dv.CreatedAt = d.time()
	dv.LastUsedAt = d.time()
	return dv, d.done()
}

func encodeEvent(e *store.Event) []byte {
	b := make([]byte, 0, 48+len(e.ID)+len(e.Type)+len(e.Data))
	b = append(b, recordFormat)
	b = appendString(b, e.ID)
	b = appendID(b, e.ProjectID)
	b = appendString(b, e.Type)
	b = appendTime(b, e.CreatedAt)
	return appendBlob(b, e.Data)
}

func decodeEvent(k, v []byte) (*store.Event, error) {
	e := &store.Event{}
	done, d, err := decodeRecord(v, e)
	if err != nil || done {
		return e, err
	}
	e.Seq = binary.BigEndian.Uint64(k)
	e.ID = d.string()
	e.ProjectID = d.id()
	e.Type = d.string()
	e.CreatedAt = d.time()
	e.Data = d.blob()
	return e, d.done()
}

func encodeMail(m *store.Mail) []byte {
	b := make([]byte, 0, 64+len(m.To)+len(m.Kind)+len(m.Body)+len(m.LastError))
	b = append(b, recordFormat)
	b = appendID(b, m.ProjectID)
	b = appendString(b, m.To)
	b = appendString(b, m.Kind)
	b = appendBlob(b, m.Body)
	b = binary.AppendUvarint(b, uint64(max(m.Attempts, 0)))
	b = appendString(b, m.LastError)
	b = appendTime(b, m.CreatedAt)
	return appendTime(b, m.NextAttemptAt)
}

func decodeMail(k, v []byte) (*store.Mail, error) {
	m := &store.Mail{}
	done, d, err := decodeRecord(v, m)
	if err != nil || done {
		return m, err
	}
	m.ID = binary.BigEndian.Uint64(k)
	m.ProjectID = d.id()
	m.To = d.string()
	m.Kind = d.string()
	m.Body = d.blob()
	m.Attempts = int(d.uvarint())
	m.LastError = d.string()
	m.CreatedAt = d.time()
	m.NextAttemptAt = d.time()
	return m, d.done()
}

// encodeRefresh encodes a refresh token's row: its session id and hash
// are its key (refreshKey), so the row holds the rest. Whether it was
// used is a byte of its own and its use time has a fixed place (0 while
// live), so the rotation that marks a token used rewrites its row
// without growing it, and a field added later can follow.
func encodeRefresh(t *store.RefreshToken) []byte {
	b := make([]byte, 0, 44)
	b = append(b, recordFormat)
	b = appendID(b, t.ProjectID)
	b = appendTime(b, t.CreatedAt)
	b = appendTime(b, t.ExpiresAt)
	var used time.Time
	if t.UsedAt == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		used = *t.UsedAt
	}
	return appendTime(b, used)
}

// decodeRefresh decodes a refresh token's row at key k, in either
// encoding.
func decodeRefresh(k, v []byte) (*store.RefreshToken, error) {
	t := &store.RefreshToken{}
	done, d, err := decodeRecord(v, t)
	if err != nil || done {
		return t, err
	}
	id, hash, ok := bytes.Cut(k, []byte{0})
	if !ok {
		return t, errBadRecord
	}
	t.SessionID, t.Hash = string(id), clone(hash)
	t.ProjectID = d.id()
	t.CreatedAt = d.time()
	t.ExpiresAt = d.time()
	switch flag, used := d.byte(), d.time(); flag {
	case 0:
	case 1:
		t.UsedAt = &used
	default:
		d.bad = true
	}
	return t, d.done()
}

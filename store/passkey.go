package store

import (
	"bytes"
	"encoding/json"
	"time"
)

// Passkey is a WebAuthn credential. Credential is go-webauthn's credential
// record as JSON (public key, sign count, transports, AAGUID, flags).
type Passkey struct {
	ID         string          `json:"id"` // base64url credential id
	UserID     string          `json:"userId"`
	ProjectID  string          `json:"projectId"`
	Credential json.RawMessage `json:"credential"`
	CreatedAt  time.Time       `json:"createdAt"`
	LastUsedAt *time.Time      `json:"lastUsedAt,omitempty"`
}

// Passkey returns projectID's credential id.
func (tx boltTx) Passkey(projectID, id string) (*Passkey, error) {
	var pk Passkey
	if err := tx.get(bucketPasskeys, compound(projectID, id), (*passkeyRow)(&pk)); err != nil {
		return nil, err
	}
	return &pk, nil
}

// PutPasskey creates or updates a credential and its user index.
func (tx boltTx) PutPasskey(pk *Passkey) error {
	if err := tx.bucket(bucketUserPasskeys).Put(compound(pk.UserID, pk.ID), nil); err != nil {
		return err
	}
	return tx.put(bucketPasskeys, compound(pk.ProjectID, pk.ID), (*passkeyRow)(pk))
}

// DeletePasskey removes a credential.
func (tx boltTx) DeletePasskey(pk *Passkey) error {
	if err := tx.del(bucketUserPasskeys, compound(pk.UserID, pk.ID)); err != nil {
		return err
	}
	return tx.del(bucketPasskeys, compound(pk.ProjectID, pk.ID))
}

// UserPasskeys returns a user's credentials, oldest first.
func (tx boltTx) UserPasskeys(projectID, userID string) ([]*Passkey, error) {
	out := []*Passkey{}
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserPasskeys).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		pk, err := tx.Passkey(projectID, string(k[len(prefix):]))
		if err == ErrNotFound {
			continue
		} else if err != nil {
			return nil, err
		}
		// The index is by user and credential id: the project's
		// credential of that id may be another user's.
		if pk.UserID == userID {
			out = append(out, pk)
		}
	}
	sortPasskeys(out)
	return out, nil
}

func sortPasskeys(p []*Passkey) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].CreatedAt.Before(p[j-1].CreatedAt); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// Challenge is a pending WebAuthn ceremony: single use, short-lived.
type Challenge struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	Kind      string          `json:"kind"` // "register" or "login"
	UserID    string          `json:"userId,omitempty"`
	Email     string          `json:"email,omitempty"` // sign-up
	Session   json.RawMessage `json:"session"`         // go-webauthn SessionData
	ExpiresAt time.Time       `json:"expiresAt"`
}

// Challenge returns the challenge with id.
func (tx boltTx) Challenge(id string) (*Challenge, error) {
	var c Challenge
	if err := tx.get(bucketChallenges, []byte(id), (*challengeRow)(&c)); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutChallenge stores c; the sweep deletes it at its ExpiresAt.
func (tx boltTx) PutChallenge(c *Challenge) error {
	v, err := json.Marshal((*challengeRow)(c))
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[ExpiringChallenges], []byte(c.ID), v, c.ExpiresAt)
}

// DeleteChallenge removes a challenge.
func (tx boltTx) DeleteChallenge(id string) error {
	return tx.deleteExpiring(&expiries[ExpiringChallenges], []byte(id))
}

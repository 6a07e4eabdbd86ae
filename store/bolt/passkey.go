package bolt

import (
	"bytes"
	"encoding/json"

	"latchkey/store"
)

// Passkey returns projectID's credential id.
func (tx txn) Passkey(projectID, id string) (*store.Passkey, error) {
	var pk store.Passkey
	if err := tx.get(bucketPasskeys, compound(projectID, id), (*passkeyRow)(&pk)); err != nil {
		return nil, err
	}
	return &pk, nil
}

// PutPasskey creates or updates a credential and its user index.
func (tx txn) PutPasskey(pk *store.Passkey) error {
	if err := tx.bucket(bucketUserPasskeys).Put(compound(pk.UserID, pk.ID), nil); err != nil {
		return err
	}
	return tx.put(bucketPasskeys, compound(pk.ProjectID, pk.ID), (*passkeyRow)(pk))
}

// DeletePasskey removes a credential.
func (tx txn) DeletePasskey(pk *store.Passkey) error {
	if err := tx.del(bucketUserPasskeys, compound(pk.UserID, pk.ID)); err != nil {
		return err
	}
	return tx.del(bucketPasskeys, compound(pk.ProjectID, pk.ID))
}

// UserPasskeys returns a user's credentials, oldest first.
func (tx txn) UserPasskeys(projectID, userID string) ([]*store.Passkey, error) {
	out := []*store.Passkey{}
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserPasskeys).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		pk, err := tx.Passkey(projectID, string(k[len(prefix):]))
		if err == store.ErrNotFound {
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

func sortPasskeys(p []*store.Passkey) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].CreatedAt.Before(p[j-1].CreatedAt); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// Challenge returns the challenge with id.
func (tx txn) Challenge(id string) (*store.Challenge, error) {
	var c store.Challenge
	if err := tx.get(bucketChallenges, []byte(id), (*challengeRow)(&c)); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutChallenge stores c; the sweep deletes it at its ExpiresAt.
func (tx txn) PutChallenge(c *store.Challenge) error {
	v, err := json.Marshal((*challengeRow)(c))
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringChallenges], []byte(c.ID), v, c.ExpiresAt)
}

// DeleteChallenge removes a challenge.
func (tx txn) DeleteChallenge(id string) error {
	return tx.deleteExpiring(&expiries[store.ExpiringChallenges], []byte(id))
}

package bolt

import (
	"bytes"

	"latchkey/store"
)

// codeKey is the key of a pending code: NUL, then kind NUL project NUL
// subject. The leading NUL keeps the codes together at the start of the
// bucket, apart from the send and failure histories (throttleKey) that
// fill the rest of it, one per address for an hour or more: a sign-in
// writes its code at the send and deletes it at the verify, and among a
// few thousand codes those two land on leaf pages that the commit's
// other codes dirty too, where among the histories each was a page of
// its own (and its branch pages) in a tree five levels deep.
func codeKey(kind, projectID, subject string) []byte {
	return append([]byte{0}, compound(kind, projectID, subject)...)
}

// codeKeyParts splits a key of the codes bucket (a code's or a
// history's) into kind, project and subject; ok is false for a key of
// neither form.
func codeKeyParts(k []byte) (kind, projectID, subject []byte, ok bool) {
	if isThrottleKey(k) {
		k = k[:len(k)-2]
	} else if len(k) > 0 && k[0] == 0 {
		k = k[1:]
	} else {
		return nil, nil, nil, false
	}
	parts := bytes.SplitN(k, []byte{0}, 3)
	if len(parts) != 3 {
		return nil, nil, nil, false
	}
	return parts[0], parts[1], parts[2], true
}

// Code returns the pending code, expired or not; callers check ExpiresAt.
func (tx txn) Code(kind, projectID, subject string) (*store.Code, error) {
	v := tx.bucket(bucketCodes).Get(codeKey(kind, projectID, subject))
	if v == nil {
		return nil, store.ErrNotFound
	}
	return decodeCode(v)
}

// PutCode stores c, replacing any pending code for the same subject; the
// sweep deletes it at its ExpiresAt.
func (tx txn) PutCode(c *store.Code) error {
	return tx.putExpiring(&expiries[store.ExpiringCodes], codeKey(c.Kind, c.ProjectID, c.Subject), encodeCode(c), c.ExpiresAt)
}

// DeleteCode removes a pending code.
func (tx txn) DeleteCode(c *store.Code) error {
	return tx.deleteExpiring(&expiries[store.ExpiringCodes], codeKey(c.Kind, c.ProjectID, c.Subject))
}

func isThrottleKey(k []byte) bool {
	return len(k) >= 2 && k[len(k)-2] == 0 && k[len(k)-1] == 't'
}

// throttleKey is the key of a send or failure history: kind NUL project
// NUL subject NUL 't', in the same bucket as the codes but after them all
// (codeKey).
func throttleKey(kind, projectID, subject string) []byte {
	return append(compound(kind, projectID, subject), 0, 't')
}

// Throttle returns the history; an unknown key gives an empty one.
func (tx txn) Throttle(kind, projectID, subject string) (*store.Throttle, error) {
	v := tx.bucket(bucketThrottles).Get(throttleKey(kind, projectID, subject))
	if v == nil {
		return &store.Throttle{}, nil
	}
	return decodeThrottle(v)
}

// PrefetchCode does nothing: a read costs no round trip here.
func (tx txn) PrefetchCode(kind, projectID, subject string) {}

// PrefetchThrottle does nothing: a read costs no round trip here.
func (tx txn) PrefetchThrottle(kind, projectID, subject string) {}

// PrefetchUsers does nothing: a read costs no round trip here.
func (tx txn) PrefetchUsers(projectID string, emails []string) {}

// PutThrottle stores the history (deleting it when empty).
func (tx txn) PutThrottle(kind, projectID, subject string, t *store.Throttle) error {
	x, key := &expiries[store.ExpiringCodes], throttleKey(kind, projectID, subject)
	if len(t.Sends) == 0 {
		return tx.deleteExpiring(x, key)
	}
	return tx.putExpiring(x, key, encodeThrottle(t), throttleDue(t))
}

// sweepKeys deletes every row of bucket for which expired says so. It
// reads the whole bucket.
func (tx txn) sweepKeys(bucket []byte, expired func(k, v []byte) (bool, error)) (int, error) {
	var keys [][]byte
	err := tx.bucket(bucket).ForEach(func(k, v []byte) error {
		ok, err := expired(k, v)
		if ok {
			keys = append(keys, clone(k))
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	b := tx.bucket(bucket)
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

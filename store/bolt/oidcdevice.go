package bolt

import (
	"bytes"
	"encoding/json"

	"latchkey/store"
)

// The OpenID providers' device authorizations (store.OIDCDevices): JSON
// rows in bucketOIDCDevices, keyed by (project, keyed hash of the device
// code), with their expiry index (expiries[store.ExpiringOIDCDeviceAuths])
// and bucketOIDCDeviceCodes, (project, user code) → the row's hash,
// which the sweep and DeleteProject empty with the rows (the expiry's
// remove).

// OIDCDeviceAuth returns projectID's device authorization whose device
// code's keyed hash is hash.
func (tx txn) OIDCDeviceAuth(projectID string, hash []byte) (*store.OIDCDeviceAuth, error) {
	if !isText(projectID) {
		return nil, store.ErrNotFound
	}
	var d store.OIDCDeviceAuth
	if err := tx.get(bucketOIDCDevices, compound(projectID, string(hash)), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// OIDCDeviceAuthByUserCode returns projectID's device authorization
// whose user code is userCode.
func (tx txn) OIDCDeviceAuthByUserCode(projectID, userCode string) (*store.OIDCDeviceAuth, error) {
	if !isText(projectID) || !isText(userCode) {
		return nil, store.ErrNotFound
	}
	hash := tx.bucket(bucketOIDCDeviceCodes).Get(compound(projectID, userCode))
	if hash == nil {
		return nil, store.ErrNotFound
	}
	return tx.OIDCDeviceAuth(projectID, hash)
}

// PutOIDCDeviceAuth stores d and its user code's index entry (the
// previous user code's goes); ErrConflict when another row of the
// project holds d.UserCode. The sweep deletes it at its ExpiresAt.
func (tx txn) PutOIDCDeviceAuth(d *store.OIDCDeviceAuth) error {
	codes := tx.bucket(bucketOIDCDeviceCodes)
	ck := compound(d.ProjectID, d.UserCode)
	if h := codes.Get(ck); h != nil && !bytes.Equal(h, d.Hash) {
		return store.ErrConflict
	}
	key := compound(d.ProjectID, string(d.Hash))
	if old := tx.bucket(bucketOIDCDevices).Get(key); old != nil {
		var o store.OIDCDeviceAuth
		if err := jsonDecode(old, &o); err != nil {
			return err
		}
		if o.UserCode != d.UserCode {
			if err := tx.dropUserCode(&o); err != nil {
				return err
			}
		}
	}
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := codes.Put(ck, append([]byte{}, d.Hash...)); err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCDeviceAuths], key, v, d.ExpiresAt)
}

// dropUserCode deletes d's user code's index entry when it is d's.
func (tx txn) dropUserCode(d *store.OIDCDeviceAuth) error {
	codes := tx.bucket(bucketOIDCDeviceCodes)
	ck := compound(d.ProjectID, d.UserCode)
	if h := codes.Get(ck); h != nil && bytes.Equal(h, d.Hash) {
		return codes.Delete(ck)
	}
	return nil
}

package store

import "time"

// APIKey is an application's credential. Only the keyed hash of the whole
// key is stored; Prefix (sk_live_/sk_test_ plus the lookup id) names it.
type APIKey struct {
	Prefix    string     `json:"prefix"`
	Hash      []byte     `json:"hash"`
	ProjectID string     `json:"projectId,omitempty"`
	Mode      string     `json:"mode"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Revoked   bool       `json:"revoked"`
	CreatedAt time.Time  `json:"createdAt"`
}

// APIKey returns the key with prefix.
func (tx boltTx) APIKey(prefix string) (*APIKey, error) {
	var k APIKey
	if err := tx.get(bucketKeys, []byte(prefix), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// PutAPIKey creates or replaces a key.
func (tx boltTx) PutAPIKey(k *APIKey) error {
	return tx.put(bucketKeys, []byte(k.Prefix), k)
}

// APIKeys returns every key, or only projectID's when it is not empty.
func (tx boltTx) APIKeys(projectID string) ([]*APIKey, error) {
	var out []*APIKey
	err := tx.bucket(bucketKeys).ForEach(func(_, v []byte) error {
		var k APIKey
		if err := jsonDecode(v, &k); err != nil {
			return err
		}
		if projectID == "" || k.ProjectID == projectID {
			out = append(out, &k)
		}
		return nil
	})
	return out, err
}

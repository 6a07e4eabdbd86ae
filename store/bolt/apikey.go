package bolt

import "latchkey/store"

// APIKey returns the key with prefix.
func (tx txn) APIKey(prefix string) (*store.APIKey, error) {
	var k store.APIKey
	if err := tx.get(bucketKeys, []byte(prefix), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// PutAPIKey creates or replaces a key.
func (tx txn) PutAPIKey(k *store.APIKey) error {
	return tx.put(bucketKeys, []byte(k.Prefix), k)
}

// APIKeys returns every key, or only projectID's when it is not empty.
func (tx txn) APIKeys(projectID string) ([]*store.APIKey, error) {
	var out []*store.APIKey
	err := tx.bucket(bucketKeys).ForEach(func(_, v []byte) error {
		var k store.APIKey
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

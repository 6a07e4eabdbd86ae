package auth

import (
	"context"
	"errors"
	"time"

	"latchkey/store"
)

// KeyInput is the body of key creation.
type KeyInput struct {
	ProjectID *string `json:"projectId"`
	Mode      string  `json:"mode"`
	ExpiresAt *string `json:"expiresAt"`
}

// KeyView is a key as the admin API shows it (never the key itself).
type KeyView struct {
	Prefix    string  `json:"prefix"`
	ProjectID *string `json:"projectId"`
	Mode      string  `json:"mode"`
	ExpiresAt *string `json:"expiresAt"`
	Revoked   bool    `json:"revoked"`
	CreatedAt string  `json:"createdAt"`
}

// ViewKey returns the admin view of k.
func ViewKey(k *store.APIKey) KeyView {
	v := KeyView{Prefix: k.Prefix, Mode: k.Mode, Revoked: k.Revoked, CreatedAt: formatTime(k.CreatedAt)}
	if k.ProjectID != "" {
		id := k.ProjectID
		v.ProjectID = &id
	}
	if k.ExpiresAt != nil {
		e := formatTime(*k.ExpiresAt)
		v.ExpiresAt = &e
	}
	return v
}

// CreateKey creates an API key and returns it; the key string is shown
// only here. A nil or empty projectId makes a key without a project
// (it authenticates but cannot call project endpoints). An expiresAt in
// the past is allowed.
func (s *Service) CreateKey(ctx context.Context, in KeyInput) (string, *store.APIKey, error) {
	if in.Mode != modeLive && in.Mode != modeTest {
		return "", nil, Invalid(`mode must be "live" or "test".`)
	}
	k := &store.APIKey{Mode: in.Mode, CreatedAt: s.now().UTC()}
	if in.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *in.ExpiresAt)
		if err != nil {
			return "", nil, Invalid("expiresAt must be an RFC 3339 timestamp.")
		}
		t = t.UTC()
		k.ExpiresAt = &t
	}
	var key string
	err := s.db.Update(ctx, func(tx store.Tx) error {
		if in.ProjectID != nil && *in.ProjectID != "" {
			if _, err := projectTx(tx, *in.ProjectID); err != nil {
				return err
			}
			k.ProjectID = *in.ProjectID
		}
		var err error
		key, err = s.putNewKey(tx, k)
		return err
	})
	if err != nil {
		return "", nil, internal(err)
	}
	return key, k, nil
}

// putNewKey gives k a fresh key of its mode (a lookup id no other key
// has), stores k with the key's keyed hash and returns the key.
func (s *Service) putNewKey(tx store.Tx, k *store.APIKey) (string, error) {
	for {
		key := newAPIKey(k.Mode)
		k.Prefix = key[:KeyPrefixLen]
		_, err := tx.APIKey(k.Prefix)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		h := s.keys.HashString(hashDomainKey, key)
		k.Hash = h[:]
		return key, tx.PutAPIKey(k)
	}
}

// Keys lists keys, all or one project's.
func (s *Service) Keys(ctx context.Context, projectID string) ([]*store.APIKey, error) {
	var out []*store.APIKey
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = tx.APIKeys(projectID)
		return err
	})
	return out, internal(err)
}

// RevokeKey revokes the key with prefix (404 API_KEY_NOT_FOUND).
func (s *Service) RevokeKey(ctx context.Context, prefix string) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		k, err := tx.APIKey(prefix)
		if errors.Is(err, store.ErrNotFound) {
			return ErrKeyNotFound
		} else if err != nil {
			return err
		}
		k.Revoked = true
		return tx.PutAPIKey(k)
	})
	if err != nil {
		return internal(err)
	}
	s.apiKeys.invalidate(prefix)
	return nil
}

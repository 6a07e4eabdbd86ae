package store

import (
	"slices"
	"strings"
	"time"
)

// ExternalMethod is a project's registration of an externally verified
// sign-in method (BYOAM). Secret is sealed with the keyring.
type ExternalMethod struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"projectId"`
	Method    string    `json:"method"`
	Pattern   string    `json:"pattern"`
	Status    string    `json:"status"`
	Secret    []byte    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
}

// ExternalMethod returns the registration with id.
func (tx boltTx) ExternalMethod(id string) (*ExternalMethod, error) {
	var m ExternalMethod
	if err := tx.get(bucketMethods, []byte(id), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ExternalMethodByName returns projectID's registration named method.
func (tx boltTx) ExternalMethodByName(projectID, method string) (*ExternalMethod, error) {
	var found *ExternalMethod
	err := tx.bucket(bucketMethods).ForEach(func(_, v []byte) error {
		if found != nil {
			return nil
		}
		var m ExternalMethod
		if err := jsonDecode(v, &m); err != nil {
			return err
		}
		if m.ProjectID == projectID && m.Method == method {
			found = &m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, ErrNotFound
	}
	return found, nil
}

// ExternalMethods returns projectID's registrations, oldest first. The
// bucket has no index by project: it is walked whole (registrations are
// few).
func (tx boltTx) ExternalMethods(projectID string) ([]*ExternalMethod, error) {
	var out []*ExternalMethod
	err := tx.bucket(bucketMethods).ForEach(func(_, v []byte) error {
		var m ExternalMethod
		if err := jsonDecode(v, &m); err != nil {
			return err
		}
		if m.ProjectID == projectID {
			out = append(out, &m)
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b *ExternalMethod) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// PutExternalMethod creates or replaces a registration.
func (tx boltTx) PutExternalMethod(m *ExternalMethod) error {
	return tx.put(bucketMethods, []byte(m.ID), m)
}

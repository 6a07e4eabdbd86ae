package bolt

import (
	"slices"
	"strings"

	"latchkey/store"
)

// ExternalMethod returns the registration with id.
func (tx txn) ExternalMethod(id string) (*store.ExternalMethod, error) {
	var m store.ExternalMethod
	if err := tx.get(bucketMethods, []byte(id), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ExternalMethodByName returns projectID's registration named method.
func (tx txn) ExternalMethodByName(projectID, method string) (*store.ExternalMethod, error) {
	var found *store.ExternalMethod
	err := tx.bucket(bucketMethods).ForEach(func(_, v []byte) error {
		if found != nil {
			return nil
		}
		var m store.ExternalMethod
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
		return nil, store.ErrNotFound
	}
	return found, nil
}

// ExternalMethods returns projectID's registrations, oldest first. The
// bucket has no index by project: it is walked whole (registrations are
// few).
func (tx txn) ExternalMethods(projectID string) ([]*store.ExternalMethod, error) {
	var out []*store.ExternalMethod
	err := tx.bucket(bucketMethods).ForEach(func(_, v []byte) error {
		var m store.ExternalMethod
		if err := jsonDecode(v, &m); err != nil {
			return err
		}
		if m.ProjectID == projectID {
			out = append(out, &m)
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b *store.ExternalMethod) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// PutExternalMethod creates or replaces a registration.
func (tx txn) PutExternalMethod(m *store.ExternalMethod) error {
	return tx.put(bucketMethods, []byte(m.ID), m)
}

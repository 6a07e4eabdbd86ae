package auth

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/google/uuid"

	"latchkey/store"
)

var methodName = lazyRegexp(`^[a-z0-9_-]{1,64}$`)

// MethodView is an external-method registration as the admin API shows
// it; Secret is set only at creation.
type MethodView struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Method    string `json:"method"`
	Pattern   string `json:"pattern"`
	Status    string `json:"status"`
	Secret    string `json:"secret,omitempty"`
	CreatedAt string `json:"createdAt"`
}

func viewMethod(m *store.ExternalMethod) MethodView {
	return MethodView{ID: m.ID, ProjectID: m.ProjectID, Method: m.Method, Pattern: m.Pattern, Status: m.Status, CreatedAt: formatTime(m.CreatedAt)}
}

// CreateMethod registers an external method for a project and returns it
// with its secret (64 hex characters), shown only here.
func (s *Service) CreateMethod(ctx context.Context, projectID, method, pattern string) (MethodView, error) {
	if !methodName().MatchString(method) {
		return MethodView{}, Invalid("method must match [a-z0-9_-]{1,64}.")
	}
	if pattern != "direct" && pattern != "webhook" {
		return MethodView{}, Invalid(`pattern must be "direct" or "webhook".`)
	}
	secret := hex.EncodeToString(randomBytes(32))
	m := &store.ExternalMethod{ID: uuid.NewString(), ProjectID: projectID, Method: method, Pattern: pattern, Status: "active", CreatedAt: s.now().UTC()}
	sealed, err := s.keys.Seal([]byte(secret), []byte("method:"+m.ID))
	if err != nil {
		return MethodView{}, internal(err)
	}
	m.Secret = sealed
	err = s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		if _, err := tx.ExternalMethodByName(projectID, method); err == nil {
			return ErrMethodExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.PutExternalMethod(m)
	})
	if err != nil {
		return MethodView{}, internal(err)
	}
	v := viewMethod(m)
	v.Secret = secret
	return v, nil
}

// Methods lists a project's external-method registrations, oldest
// first, without their secrets. An unknown project is 404
// PROJECT_NOT_FOUND.
func (s *Service) Methods(ctx context.Context, projectID string) ([]MethodView, error) {
	out := []MethodView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		ms, err := tx.ExternalMethods(projectID)
		for _, m := range ms {
			out = append(out, viewMethod(m))
		}
		return err
	})
	return out, internal(err)
}

// SetMethodStatus activates or deactivates a registration.
func (s *Service) SetMethodStatus(ctx context.Context, id, status string) (MethodView, error) {
	if status != "active" && status != "inactive" {
		return MethodView{}, Invalid(`status must be "active" or "inactive".`)
	}
	var m *store.ExternalMethod
	err := s.db.Update(ctx, func(tx store.Tx) error {
		var err error
		m, err = tx.ExternalMethod(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrMethodNotFound
		} else if err != nil {
			return err
		}
		m.Status = status
		return tx.PutExternalMethod(m)
	})
	if err != nil {
		return MethodView{}, internal(err)
	}
	return viewMethod(m), nil
}

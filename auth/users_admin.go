package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"latchkey/store"
)

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// UserPage is one page of a project's users in email order. NextCursor,
// when not nil, asks for the next page; it is nil on the last one.
type UserPage struct {
	Users      []AdminUser
	NextCursor *string
}

// AdminUsers lists a page of a project's users in email order: limit of
// them (default 100, at most MaxPageSize), after cursor (the NextCursor of
// the previous page; "" from the first). The email filter uses the email
// index: a whole address matches exactly, anything else ("ada@", "ad") is
// an address prefix (a search). Each page costs the same at any depth: a
// seek in the index, then limit rows. 400 VALIDATION_ERROR for a cursor
// that is not one, 404 PROJECT_NOT_FOUND for an unknown project.
func (s *Service) AdminUsers(ctx context.Context, projectID, email, cursor string, limit int) (UserPage, error) {
	if projectID == "" {
		return UserPage{}, Invalid("projectId is required.")
	}
	limit = pageSize(limit)
	after, err := parseUserCursor(cursor)
	if err != nil {
		return UserPage{}, err
	}
	email = strings.ToLower(strings.TrimSpace(email))
	page := UserPage{Users: []AdminUser{}}
	err = s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		if addr, err := NormalizeEmail(email); err == nil {
			if after != "" && after >= addr {
				return nil
			}
			u, err := tx.UserByEmail(projectID, addr)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			v, err := viewAdminUser(tx, u)
			page.Users = append(page.Users, v)
			return err
		}
		users, more, err := tx.Users(projectID, email, after, limit)
		if err != nil {
			return err
		}
		for _, u := range users {
			v, err := viewAdminUser(tx, u)
			if err != nil {
				return err
			}
			page.Users = append(page.Users, v)
		}
		if more && len(users) > 0 {
			c := userCursor(users[len(users)-1].Email)
			page.NextCursor = &c
		}
		return nil
	})
	return page, internal(err)
}

// userCursor is the opaque cursor after a user: its address, base64url.
func userCursor(email string) string { return base64.RawURLEncoding.EncodeToString([]byte(email)) }

func parseUserCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 || len(b) > 1024 {
		return "", Invalid("cursor is not valid: pass the nextCursor of the previous page.")
	}
	return string(b), nil
}

// NullableString is a JSON field that may be absent (Set false), null
// (Set true, Value nil) or a string.
type NullableString struct {
	Set   bool
	Value *string
}

// UnmarshalJSON implements json.Unmarshaler; a non-string, non-null value
// is a *json.UnmarshalTypeError.
func (n *NullableString) UnmarshalJSON(b []byte) error {
	n.Set = true
	n.Value = nil
	return json.Unmarshal(b, &n.Value)
}

// UserAdminPatch is the body of PATCH /admin/users/:id: any of its
// fields, at least one; a field that is absent leaves the user's as it
// is. Null clears a field.
type UserAdminPatch struct {
	// CompanyID is 1 to 128 characters (trimmed), or null.
	CompanyID NullableString `json:"companyId"`
	// Groups is an array of group names (see parseGroups), or null; it
	// replaces the user's groups whole.
	Groups json.RawMessage `json:"groups"`
	// Metadata is a JSON object (see parseMetadata), or null; it
	// replaces the user's metadata whole.
	Metadata json.RawMessage `json:"metadata"`
}

// UpdateAdminUser changes the fields of user id that in gives, in one
// transaction, and returns the user as the admin API shows it. A body
// without any field, or with a value that is not valid, is 400
// VALIDATION_ERROR naming the field, and changes nothing; 404
// USER_NOT_FOUND for an unknown id. No webhook event is emitted: these
// are the operator's fields, not changes the user made.
func (s *Service) UpdateAdminUser(ctx context.Context, id string, in UserAdminPatch) (AdminUser, error) {
	if !in.CompanyID.Set && in.Groups == nil && in.Metadata == nil {
		return AdminUser{}, Invalid("Send at least one of companyId, groups and metadata.")
	}
	var company string
	if in.CompanyID.Set && in.CompanyID.Value != nil {
		company = strings.TrimSpace(*in.CompanyID.Value)
		if company == "" || len(company) > 128 {
			return AdminUser{}, Invalid("companyId must be 1 to 128 characters or null.")
		}
	}
	var groups []string
	if in.Groups != nil {
		var err error
		if groups, err = parseGroups(in.Groups); err != nil {
			return AdminUser{}, Invalid("%s.", err)
		}
	}
	var metadata json.RawMessage
	if in.Metadata != nil {
		var err error
		if metadata, err = parseMetadata(in.Metadata); err != nil {
			return AdminUser{}, Invalid("%s.", err)
		}
	}
	var view AdminUser
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		if in.CompanyID.Set {
			u.CompanyID = company
		}
		if in.Groups != nil {
			u.Groups = groups
		}
		if in.Metadata != nil {
			u.Metadata = metadata
		}
		u.UpdatedAt = s.now().UTC()
		if err := tx.PutUser(u); err != nil {
			return err
		}
		view, err = viewAdminUser(tx, u)
		return err
	})
	if err != nil {
		return AdminUser{}, internal(err)
	}
	return view, nil
}

// SetUserDisabled disables or enables a user. Disabling revokes every
// session of the user in the same transaction.
func (s *Service) SetUserDisabled(ctx context.Context, id string, disabled bool) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		u.Disabled = disabled
		u.UpdatedAt = s.now().UTC()
		if disabled {
			if err := s.revokeAll(tx, u); err != nil {
				return err
			}
		}
		return tx.PutUser(u)
	})
	return internal(err)
}

package auth

// The user as each part of the API shows it. The casing of each view's
// fields is part of its wire form: login results say company_id and
// first_name, every other view companyId and firstName. Every view
// shows the user's groups ([] for none) and metadata ({} for none).

import (
	"encoding/json"

	"latchkey/store"
)

// UserView is the user object every login result carries (docs/api.md,
// "Login results").
type UserView struct {
	ID             string  `json:"id"`
	Email          string  `json:"email"`
	ExternalUserID *string `json:"externalUserId"`
	CompanyID      *string `json:"company_id"`
	FirstName      *string `json:"first_name"`
	EmailVerified  bool    `json:"emailVerified"`
	// Groups and Metadata are the user's, as the operator set them.
	Groups   []string        `json:"groups"`
	Metadata json.RawMessage `json:"metadata"`
}

// ViewUser returns the login-result view of u.
func ViewUser(u *store.User) UserView {
	return UserView{ID: u.ID, Email: u.Email, ExternalUserID: nullable(u.ExternalUserID),
		CompanyID: nullable(u.CompanyID), FirstName: nullable(u.FirstName), EmailVerified: isVerified(u),
		Groups: viewGroups(u.Groups), Metadata: viewMetadata(u.Metadata)}
}

// AdminUser is a user as the admin API shows it (GET /admin/users,
// PATCH /admin/users/:id).
type AdminUser struct {
	ID             string  `json:"id"`
	ProjectID      string  `json:"projectId"`
	Email          string  `json:"email"`
	ExternalUserID *string `json:"externalUserId"`
	CompanyID      *string `json:"companyId"`
	FirstName      *string `json:"firstName"`
	EmailVerified  bool    `json:"emailVerified"`
	Disabled       bool    `json:"disabled"`
	CreatedAt      string  `json:"createdAt"`
	// Groups and Metadata are the user's, as the operator set them.
	Groups   []string        `json:"groups"`
	Metadata json.RawMessage `json:"metadata"`
}

// viewAdminUser returns the admin view of u, settling its emailVerified
// inside tx.
func viewAdminUser(tx store.Tx, u *store.User) (AdminUser, error) {
	if _, err := settleVerified(tx, u); err != nil {
		return AdminUser{}, err
	}
	return AdminUser{ID: u.ID, ProjectID: u.ProjectID, Email: u.Email, ExternalUserID: nullable(u.ExternalUserID),
		CompanyID: nullable(u.CompanyID), FirstName: nullable(u.FirstName), EmailVerified: isVerified(u),
		Disabled: u.Disabled, CreatedAt: formatTime(u.CreatedAt), Groups: viewGroups(u.Groups), Metadata: viewMetadata(u.Metadata)}, nil
}

// ExportUser is one line of an export (GET
// /admin/projects/:id/users/export): a user without any secret, with the
// names of its factors ("totp", "sms", "passkey", "backup_codes").
type ExportUser struct {
	ID             string   `json:"id"`
	Email          string   `json:"email"`
	ExternalUserID *string  `json:"externalUserId"`
	FirstName      *string  `json:"firstName"`
	CompanyID      *string  `json:"companyId"`
	EmailVerified  bool     `json:"emailVerified"`
	Disabled       bool     `json:"disabled"`
	CreatedAt      string   `json:"createdAt"`
	Factors        []string `json:"factors"`
	// Groups and Metadata are the user's, as an import takes them back.
	Groups   []string        `json:"groups"`
	Metadata json.RawMessage `json:"metadata"`
}

// AccountUser is the user object of the account calls (GET and PATCH
// /user, POST /user/email/verify).
type AccountUser struct {
	ID             string  `json:"id"`
	Email          string  `json:"email"`
	ExternalUserID *string `json:"externalUserId"`
	FirstName      *string `json:"firstName"`
	CompanyID      *string `json:"companyId"`
	EmailVerified  bool    `json:"emailVerified"`
	// Groups and Metadata are the user's, as the operator set them: the
	// user sees them, and cannot change them.
	Groups   []string        `json:"groups"`
	Metadata json.RawMessage `json:"metadata"`
}

// ViewAccount returns the account view of u (its emailVerified as
// stored: the callers pass a user whose field is settled).
func ViewAccount(u *store.User) AccountUser {
	v := AccountUser{ID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified != nil && *u.EmailVerified,
		Groups: viewGroups(u.Groups), Metadata: viewMetadata(u.Metadata)}
	if u.ExternalUserID != "" {
		v.ExternalUserID = &u.ExternalUserID
	}
	if u.FirstName != "" {
		v.FirstName = &u.FirstName
	}
	if u.CompanyID != "" {
		v.CompanyID = &u.CompanyID
	}
	return v
}

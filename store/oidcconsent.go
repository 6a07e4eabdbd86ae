package store

import "time"

// OIDCConsent is what a user allowed a third-party client of a project's
// OpenID provider to have: the scopes granted, remembered per (ProjectID,
// UserID, ClientID) so that a later sign-in asking for no more skips the
// consent page. A user or an operator revokes it (the row goes); it goes
// with its user (DeleteUser), its client (DeleteOIDCClient) and its
// project, and never expires.
type OIDCConsent struct {
	ProjectID string `json:"projectId"`
	UserID    string `json:"userId"`
	ClientID  string `json:"clientId"`
	// Scopes are every scope granted so far, in the order first granted.
	Scopes []string `json:"scopes"`
	// GrantedAt is when the user first allowed the client; UpdatedAt
	// when they last allowed it (more scopes, or prompt=consent).
	GrantedAt time.Time `json:"grantedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

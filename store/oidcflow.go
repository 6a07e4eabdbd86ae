package store

import "time"

// Records of the OpenID providers' authorization code flow: the
// authorization requests in flight (with the code issued for them) and
// the grants the codes were exchanged for. Both are keyed by (project,
// id), so a project's provider never reaches another's, and both expire:
// the sweep deletes them at their ExpiresAt, DeleteProject with their
// project.

// OIDCAuthRequest is one authorization request of a project's provider:
// what the client asked for, then the sign-in that answered it, then the
// code issued for it, then the grant the code was exchanged for.
type OIDCAuthRequest struct {
	ProjectID string `json:"projectId"`
	ID        string `json:"id"`
	ClientID  string `json:"clientId"`
	// What the client asked for (the authorization request's parameters).
	RedirectURI         string   `json:"redirectUri"`
	Scopes              []string `json:"scopes"`
	State               string   `json:"state"`
	Nonce               string   `json:"nonce"`
	ResponseType        string   `json:"responseType"`
	ResponseMode        string   `json:"responseMode"`
	CodeChallenge       string   `json:"codeChallenge"`
	CodeChallengeMethod string   `json:"codeChallengeMethod"`
	Prompt              []string `json:"prompt"`
	// MaxAge is max_age in seconds; nil when the request had none.
	MaxAge    *int64   `json:"maxAge"`
	LoginHint string   `json:"loginHint"`
	UILocales []string `json:"uiLocales"`
	// HintUserID is the subject of a verified id_token_hint.
	HintUserID string    `json:"hintUserId"`
	CreatedAt  time.Time `json:"createdAt"`

	// The sign-in that answered it: the user, the session, when the
	// user last signed in, how (amr and acr values); Done once the
	// request may be answered with a code.
	UserID    string    `json:"userId"`
	SessionID string    `json:"sessionId"`
	AuthTime  time.Time `json:"authTime"`
	AMR       []string  `json:"amr"`
	ACR       string    `json:"acr"`
	Done      bool      `json:"done"`

	// CodeHash is the keyed hash of the code issued for it (nil before);
	// CodeExpiresAt when that code stops being accepted.
	CodeHash      []byte    `json:"codeHash"`
	CodeExpiresAt time.Time `json:"codeExpiresAt"`
	// GrantID is the grant its code was exchanged for; "" before.
	GrantID string `json:"grantId"`

	// ExpiresAt is when the sweep deletes it.
	ExpiresAt time.Time `json:"expiresAt"`
}

// OIDCGrant is what a client was granted by one code exchange: the user,
// the session it was signed in with, the scopes, how the user was
// proven. Access tokens name their grant (in their jti) and die with it:
// when it is revoked, when its session ends, at its ExpiresAt.
type OIDCGrant struct {
	ProjectID string    `json:"projectId"`
	ID        string    `json:"id"`
	ClientID  string    `json:"clientId"`
	UserID    string    `json:"userId"`
	SessionID string    `json:"sessionId"`
	Scopes    []string  `json:"scopes"`
	AMR       []string  `json:"amr"`
	ACR       string    `json:"acr"`
	AuthTime  time.Time `json:"authTime"`
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when the last token of the grant expires: the sweep
	// deletes it then.
	ExpiresAt time.Time `json:"expiresAt"`
	// RevokedAt is when it was revoked; zero while it is not.
	RevokedAt time.Time `json:"revokedAt"`
	// RevokedFor says why (a replayed code, say); "" while not revoked.
	RevokedFor string `json:"revokedFor"`
}

package store

import "time"

// OAuthFlow is a sign-in with one of a project's providers (Provider) in
// flight, latchkey being the provider's client: first the state that
// waits for the provider's callback (Kind OAuthFlowState), then the
// one-time code that waits for the app's exchange (Kind OAuthFlowCode).
// Each is single use and lives minutes: the sweep deletes it at its
// ExpiresAt (ExpiringOAuthFlows), DeleteProject with its project. It is
// not a WebAuthn ceremony (Challenge).
type OAuthFlow struct {
	// ID is the keyed hash of the state or of the code (auth makes it),
	// so that no row is keyed by a secret.
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	// Kind is OAuthFlowState or OAuthFlowCode.
	Kind string `json:"kind"`
	// Payload is what auth keeps for the flow's next step (its JSON),
	// opaque to the store and kept byte for byte.
	Payload   []byte    `json:"payload"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// The kinds of OAuthFlow.
const (
	// OAuthFlowState is a started sign-in waiting for the provider's
	// callback, keyed by its state.
	OAuthFlowState = "state"
	// OAuthFlowCode is a callback's proven identity waiting for the
	// app's exchange, keyed by its one-time code.
	OAuthFlowCode = "code"
)

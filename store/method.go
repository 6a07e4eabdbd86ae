package store

import "time"

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

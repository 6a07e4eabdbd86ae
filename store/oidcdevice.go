package store

import "time"

// Records of the OpenID providers' device authorization grant (RFC
// 8628): a device (a CLI, a TV) asks for a device code and a user code,
// the user approves or denies it on the provider's device page, and the
// device polls with the device code until it gets its tokens once.

// States of an OIDCDeviceAuth.
const (
	// DeviceAuthPending: the user has not answered yet.
	DeviceAuthPending = "pending"
	// DeviceAuthApproved: the user allowed it; the next poll gets the
	// tokens (GrantID is set then).
	DeviceAuthApproved = "approved"
	// DeviceAuthDenied: the user refused it.
	DeviceAuthDenied = "denied"
)

// OIDCDeviceAuth is one device authorization of a project's provider,
// keyed by (ProjectID, Hash), Hash being the keyed hash of the device
// code (the code itself is never stored); UserCode, what the user types
// on the device page, is unique among a project's rows. The sweep
// deletes it at ExpiresAt, DeleteProject with its project.
type OIDCDeviceAuth struct {
	ProjectID string `json:"projectId"`
	Hash      []byte `json:"hash"`
	// UserCode is the code the user enters, as shown ("BCDF-GHJK").
	UserCode string   `json:"userCode"`
	ClientID string   `json:"clientId"`
	Scopes   []string `json:"scopes"`
	// State is DeviceAuthPending, DeviceAuthApproved or
	// DeviceAuthDenied.
	State string `json:"state"`
	// Once answered: the user, the session the approval made for the
	// device, when and how the user was proven (amr and acr values).
	UserID    string    `json:"userId"`
	SessionID string    `json:"sessionId"`
	AuthTime  time.Time `json:"authTime"`
	AMR       []string  `json:"amr"`
	ACR       string    `json:"acr"`
	// GrantID is the grant the device got its tokens under: "" until
	// the poll that took them (the code is then spent).
	GrantID   string    `json:"grantId"`
	CreatedAt time.Time `json:"createdAt"`
	// LastPollAt is the device's last poll; zero before the first.
	LastPollAt time.Time `json:"lastPollAt"`
	// ExpiresAt is when the codes stop working and the sweep deletes
	// the row.
	ExpiresAt time.Time `json:"expiresAt"`
}

package store

import "time"

// Project is one application using latchkey: its users, keys and settings.
type Project struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	CompanyID          string    `json:"companyId"`
	AllowedOrigins     []string  `json:"allowedOrigins"`
	RPID               string    `json:"rpId"`
	SessionTTLSeconds  int       `json:"sessionTtlSeconds"`
	RateLimitPerMinute int       `json:"rateLimitPerMinute"`
	DenyCIDRs          []string  `json:"denyCidrs"`
	CreatedAt          time.Time `json:"createdAt"`

	// SigningKeyID is the JWT "kid" of the project's ES256 key.
	SigningKeyID string `json:"signingKeyId"`
	// SigningKey is the PKCS#8 private key, sealed with the keyring.
	SigningKey []byte `json:"signingKey"`
	// PublicKey is the PKIX public key, published in the JWKS.
	PublicKey []byte `json:"publicKey"`
}

// Project returns the project with id.
func (tx *Tx) Project(id string) (*Project, error) {
	var p Project
	if err := tx.get(bucketProjects, []byte(id), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PutProject creates or replaces a project.
func (tx *Tx) PutProject(p *Project) error {
	return tx.put(bucketProjects, []byte(p.ID), p)
}

// Projects returns every project in id order.
func (tx *Tx) Projects() ([]*Project, error) {
	var out []*Project
	err := tx.bucket(bucketProjects).ForEach(func(k, v []byte) error {
		var p Project
		if err := jsonDecode(v, &p); err != nil {
			return err
		}
		out = append(out, &p)
		return nil
	})
	return out, err
}

// DeleteProject removes a project row and its webhooks, with their
// queued deliveries and history: nothing is sent for a project that is
// gone. Its users and keys stay and can no longer be used.
func (tx *Tx) DeleteProject(id string) error {
	hooks, err := tx.Webhooks(id)
	if err != nil {
		return err
	}
	for _, w := range hooks {
		if err := tx.DeleteWebhook(w); err != nil {
			return err
		}
	}
	return tx.del(bucketProjects, []byte(id))
}

package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"latchkey/store"
)

// The signing keys of a project's OpenID provider: one active RS256 and
// one active ES256 key per project, made in one transaction on the
// project's first use of its provider (OIDCKeys), the private halves
// sealed with the keyring and decrypted once per process. They are
// apart from the project's session-token key (Project.SigningKey), so
// that a token of one kind can never pass for the other.

// OIDC signing algorithms: every project has an active key of each.
const (
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
)

// oidcAlgs are the algorithms of a project's provider keys, in the
// order the JWKS lists them.
var oidcAlgs = []string{AlgRS256, AlgES256}

// OIDCKeyPublishedFor is how long a retired provider key stays in the
// JWKS: longer than any token it signed lives (access tokens at most a
// day), so that relying parties verify them until they expire.
const OIDCKeyPublishedFor = 25 * time.Hour

// rsaKeyBits is the size of the providers' RSA keys.
const rsaKeyBits = 2048

// OIDCSigningKey is a decrypted signing key of a project's provider.
type OIDCSigningKey struct {
	// ID is the "kid": the key's RFC 7638 thumbprint.
	ID string
	// Alg is AlgRS256 or AlgES256.
	Alg string
	// Private is an *rsa.PrivateKey or an *ecdsa.PrivateKey.
	Private crypto.Signer
}

// OIDCPublicKey is a public key of a project's provider JWKS.
type OIDCPublicKey struct {
	ID  string
	Alg string
	// Key is an *rsa.PublicKey or an *ecdsa.PublicKey.
	Key crypto.PublicKey
}

// OIDCKeySet is a project's provider keys: the active key of each
// algorithm, and the public keys its JWKS publishes (the active keys,
// then retired keys still within OIDCKeyPublishedFor, newest first).
type OIDCKeySet struct {
	Active    map[string]*OIDCSigningKey // by Alg
	Published []OIDCPublicKey
}

// oidcKeyAAD binds a sealed provider key to its project and kid.
func oidcKeyAAD(projectID, kid string) []byte {
	return []byte("oidc-key:" + projectID + "/" + kid)
}

// OIDCKeys returns projectID's provider keys, making the missing active
// keys first (404 PROJECT_NOT_FOUND for an unknown project). Replicas
// and concurrent calls that find a project without keys make them in
// one transaction each, taking turns on the project (store.Tx.Lock), so
// a project never gets two active keys of one algorithm: the store
// refuses a second one too. Keys are decrypted once per process.
//
// The set is kept in memory (every token the provider signs or checks
// needs it) for oidcKeySetFor at most, so that a retired key leaves the
// JWKS on time, and dropped when its project changes or is deleted, on
// every replica. A project's keys change only when they are made or
// retired: a key retired without the service (by the store) is seen
// within oidcKeySetFor.
func (s *Service) OIDCKeys(ctx context.Context, projectID string) (*OIDCKeySet, error) {
	now := s.now()
	if c, ok := s.oidcKeySets.get(projectID); ok && now.Before(c.until) {
		return c.set, nil
	}
	gen := s.oidcKeySets.generation()
	keys, err := s.readOIDCKeys(ctx, projectID)
	if err != nil {
		return nil, err
	}
	if len(missingOIDCAlgs(keys)) > 0 {
		if keys, err = s.makeOIDCKeys(ctx, projectID); err != nil {
			return nil, err
		}
	}
	set, err := s.oidcKeySet(projectID, keys)
	if err != nil {
		return nil, internal(err)
	}
	if len(set.Active) == len(oidcAlgs) {
		until := now.Add(oidcKeySetFor)
		for _, k := range keys {
			if end := k.RetiredAt.Add(OIDCKeyPublishedFor); !k.RetiredAt.IsZero() && end.After(now) && end.Before(until) {
				until = end // the JWKS drops it then
			}
		}
		s.oidcKeySets.fill(projectID, &cachedKeySet{set: set, until: until}, gen)
	}
	return set, nil
}

// oidcKeySetFor is how long a project's key set is kept in memory.
const oidcKeySetFor = time.Minute

// cachedKeySet is a project's key set as kept in memory, until a time.
type cachedKeySet struct {
	set   *OIDCKeySet
	until time.Time
}

// readOIDCKeys reads projectID's provider keys.
func (s *Service) readOIDCKeys(ctx context.Context, projectID string) ([]*store.OIDCKey, error) {
	var keys []*store.OIDCKey
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		var err error
		keys, err = tx.OIDCKeys(projectID)
		return err
	})
	return keys, internal(err)
}

// makeOIDCKeys adds projectID's missing active keys and returns its
// keys. The keys are made before the transaction (an RSA key takes a
// while), one caller of this process at a time; the transaction adds
// those still missing when it runs.
func (s *Service) makeOIDCKeys(ctx context.Context, projectID string) ([]*store.OIDCKey, error) {
	s.oidcKeyGen.Lock()
	defer s.oidcKeyGen.Unlock()
	keys, err := s.readOIDCKeys(ctx, projectID)
	if err != nil {
		return nil, err
	}
	fresh := map[string]*store.OIDCKey{}
	for _, alg := range missingOIDCAlgs(keys) {
		if fresh[alg], err = s.newOIDCKey(projectID, alg); err != nil {
			return nil, internal(err)
		}
	}
	if len(fresh) == 0 {
		return keys, nil
	}
	err = s.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock("oidc-keys:" + projectID); err != nil {
			return err
		}
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		var err error
		if keys, err = tx.OIDCKeys(projectID); err != nil {
			return err
		}
		for _, alg := range missingOIDCAlgs(keys) {
			if err := tx.AddOIDCKey(fresh[alg]); err != nil {
				return err
			}
			keys = append(keys, fresh[alg])
		}
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		// Another replica added a key between this transaction's read
		// and its write, where the store could not make them take
		// turns: its keys are the project's.
		return s.readOIDCKeys(ctx, projectID)
	}
	return keys, internal(err)
}

// missingOIDCAlgs returns the algorithms keys has no active key of.
func missingOIDCAlgs(keys []*store.OIDCKey) []string {
	var out []string
	for _, alg := range oidcAlgs {
		found := false
		for _, k := range keys {
			if k.Alg == alg && k.RetiredAt.IsZero() {
				found = true
				break
			}
		}
		if !found {
			out = append(out, alg)
		}
	}
	return out
}

// newOIDCKey makes a new active key of alg for projectID, its private
// half sealed.
func (s *Service) newOIDCKey(projectID, alg string) (*store.OIDCKey, error) {
	var priv crypto.Signer
	var err error
	switch {
	case s.signingKey != nil:
		priv, err = s.signingKey(alg)
	case alg == AlgRS256:
		priv, err = rsa.GenerateKey(rand.Reader, rsaKeyBits)
	case alg == AlgES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		err = fmt.Errorf("unknown signing algorithm %q", alg)
	}
	if err != nil {
		return nil, err
	}
	pub := jose.JSONWebKey{Key: priv.Public(), Algorithm: alg, Use: "sig"}
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	pub.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	jwk, err := pub.MarshalJSON()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	sealed, err := s.keys.Seal(der, oidcKeyAAD(projectID, pub.KeyID))
	if err != nil {
		return nil, err
	}
	return &store.OIDCKey{ProjectID: projectID, ID: pub.KeyID, Alg: alg, PrivateKey: sealed, PublicJWK: jwk,
		CreatedAt: s.now().UTC()}, nil
}

// oidcKeySet decrypts (once per process) the active keys among keys
// and reads the public keys to publish.
func (s *Service) oidcKeySet(projectID string, keys []*store.OIDCKey) (*OIDCKeySet, error) {
	set := &OIDCKeySet{Active: map[string]*OIDCSigningKey{}}
	var retired []OIDCPublicKey
	now := s.now()
	// keys come oldest first: the newest retired key is published first.
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		active := k.RetiredAt.IsZero()
		if !active && now.Sub(k.RetiredAt) >= OIDCKeyPublishedFor {
			continue
		}
		if !active {
			pub, err := s.oidcPublicKey(k)
			if err != nil {
				return nil, err
			}
			retired = append(retired, pub)
			continue
		}
		sk, err := s.oidcSigningKey(k)
		if err != nil {
			return nil, err
		}
		set.Active[k.Alg] = sk
	}
	for _, alg := range oidcAlgs {
		if k := set.Active[alg]; k != nil {
			set.Published = append(set.Published, OIDCPublicKey{ID: k.ID, Alg: k.Alg, Key: k.Private.Public()})
		}
	}
	set.Published = append(set.Published, retired...)
	return set, nil
}

// oidcSigningKey returns k decrypted, from the process's cache after
// the first time.
func (s *Service) oidcSigningKey(k *store.OIDCKey) (*OIDCSigningKey, error) {
	id := k.ProjectID + "/" + k.ID
	if v, ok := s.oidcSigners.Load(id); ok {
		return v.(*OIDCSigningKey), nil
	}
	der, err := s.keys.Open(k.PrivateKey, oidcKeyAAD(k.ProjectID, k.ID))
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	var priv crypto.Signer
	switch p := parsed.(type) {
	case *rsa.PrivateKey:
		if k.Alg == AlgRS256 {
			priv = p
		}
	case *ecdsa.PrivateKey:
		if k.Alg == AlgES256 {
			priv = p
		}
	}
	if priv == nil {
		return nil, fmt.Errorf("provider key %s is a %T, not an %s key", k.ID, parsed, k.Alg)
	}
	sk := &OIDCSigningKey{ID: k.ID, Alg: k.Alg, Private: priv}
	s.oidcSigners.Store(id, sk)
	return sk, nil
}

// oidcPublicKey reads k's public JWK.
func (s *Service) oidcPublicKey(k *store.OIDCKey) (OIDCPublicKey, error) {
	var jwk jose.JSONWebKey
	if err := json.Unmarshal(k.PublicJWK, &jwk); err != nil {
		return OIDCPublicKey{}, fmt.Errorf("provider key %s: %w", k.ID, err)
	}
	return OIDCPublicKey{ID: k.ID, Alg: k.Alg, Key: jwk.Key}, nil
}

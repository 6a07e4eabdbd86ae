package auth

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"latchkey/store"
)

// DiscoveryTTL is how long a provider's OpenID Connect discovery (its
// document, and the JWKS read through it) is used before the next
// sign-in with that provider reads it again.
const DiscoveryTTL = time.Hour

// discovered caches OpenID Connect discovery by provider id (and with
// it the issuer's JWKS, which go-oidc refreshes on an unknown key id),
// for DiscoveryTTL by the service's clock. Removing a provider, or its
// project, drops its entries; a provider added again has a new id, so
// it is discovered anew. On other replicas a removed provider's entry
// is never used again (the project row no longer names it) and expires:
// entries past their TTL are dropped as others are filled. Safe for
// concurrent use; the mutex is never held across I/O (two sign-ins that
// miss at once both read the document, and the later fill wins).
type discovered struct {
	mu sync.Mutex
	m  map[string]discovery // by provider id
}

// discovery is one provider's discovered OpenID Connect configuration:
// the provider object, and the key set of its JWKS (read when a token
// names a key id it does not hold) with the signing algorithms it
// announces.
type discovery struct {
	op        *oidc.Provider
	keys      oidc.KeySet
	algs      []string
	projectID string
	issuer    string
	fetched   time.Time
}

// signingAlg reports whether go-oidc verifies ID tokens signed with alg.
func signingAlg(alg string) bool {
	switch alg {
	case oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA:
		return true
	}
	return false
}

// get returns the discovery of provider pr of project projectID,
// reading its issuer's discovery document when there is no entry, or
// its entry is older than DiscoveryTTL at now. ctx carries the client
// of the call; keysCtx the client (and nothing else) for the key set's
// later reads of the JWKS.
func (d *discovered) get(ctx, keysCtx context.Context, projectID string, pr *store.Provider, multiTenant bool, now time.Time) (discovery, error) {
	d.mu.Lock()
	e, ok := d.m[pr.ID]
	d.mu.Unlock()
	if ok && e.issuer == pr.Issuer && now.Sub(e.fetched) < DiscoveryTTL {
		return e, nil
	}
	if multiTenant {
		// Microsoft's multi-tenant discovery names a templated issuer;
		// the token's issuer is checked against the tenant (identify).
		ctx = oidc.InsecureIssuerURLContext(ctx, strings.Replace(pr.Issuer, "/common/", "/{tenantid}/", 1))
	}
	op, err := oidc.NewProvider(ctx, pr.Issuer)
	if err != nil {
		return discovery{}, err
	}
	var doc struct {
		JWKS string   `json:"jwks_uri"`
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := op.Claims(&doc); err != nil {
		return discovery{}, err
	}
	e = discovery{op: op, keys: oidc.NewRemoteKeySet(keysCtx, doc.JWKS), projectID: projectID, issuer: pr.Issuer, fetched: now}
	for _, a := range doc.Algs {
		if signingAlg(a) {
			e.algs = append(e.algs, a)
		}
	}
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]discovery{}
	}
	for id, old := range d.m {
		if now.Sub(old.fetched) >= DiscoveryTTL {
			delete(d.m, id)
		}
	}
	d.m[pr.ID] = e
	d.mu.Unlock()
	return e, nil
}

// forget drops the entry of provider providerID, or with providerID
// "" the entries of every provider of project projectID.
func (d *discovered) forget(projectID, providerID string) {
	d.mu.Lock()
	for id, e := range d.m {
		if id == providerID || providerID == "" && e.projectID == projectID {
			delete(d.m, id)
		}
	}
	d.mu.Unlock()
}

// keyErrKey is the context key of the slot where reportingKeys keeps a
// verification's key-set failure, which go-oidc's error leaves out.
type keyErrKey struct{}

// reportingKeys is a key set that keeps its failure (a JWKS that could
// not be read, say) in the slot of the verification's context, so that
// identify can tell an unreachable JWKS from a bad signature.
type reportingKeys struct{ oidc.KeySet }

// VerifySignature verifies jwt with the key set, keeping its failure.
func (k reportingKeys) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.KeySet.VerifySignature(ctx, jwt)
	if slot, ok := ctx.Value(keyErrKey{}).(*error); ok && err != nil {
		*slot = err
	}
	return payload, err
}

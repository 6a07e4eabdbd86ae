package testkit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"fmt"
	"sync"
)

// rsaKeysPEM holds RSA-2048 private keys (PKCS #8) generated once for
// the tests and never used anywhere else: an RSA key costs a quarter of a
// CPU-second under the race detector, and every test server whose
// provider signs a token made one.
//
//go:embed testdata/rsa2048.pem
var rsaKeysPEM []byte

// rsaKeys hands out the keys of rsaKeysPEM, each once per process.
var rsaKeys struct {
	mu   sync.Mutex
	rest []byte // the PEM not handed out yet
}

func init() { rsaKeys.rest = rsaKeysPEM }

// SigningKey returns a new private key of a provider's signing
// algorithm, "RS256" (RSA-2048) or "ES256" (P-256), as the service's
// own key generation does (auth.Config.SigningKey takes it), but an RSA
// key comes from keys generated beforehand: each is handed out at most
// once per process, so two keys never match, as two generated ones
// would not; once they are all out, it generates them. ES256 keys cost
// little and are generated.
func SigningKey(alg string) (crypto.Signer, error) {
	switch alg {
	case "RS256":
		if k, err := nextRSAKey(); k != nil || err != nil {
			return k, err
		}
		return rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return nil, fmt.Errorf("testkit: unknown signing algorithm %q", alg)
}

// nextRSAKey returns the next key of rsaKeysPEM not handed out yet, nil
// when none is left.
func nextRSAKey() (*rsa.PrivateKey, error) {
	rsaKeys.mu.Lock()
	var b *pem.Block
	b, rsaKeys.rest = pem.Decode(rsaKeys.rest)
	rsaKeys.mu.Unlock()
	if b == nil {
		return nil, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("testkit: testdata/rsa2048.pem: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok || rk.N.BitLen() != 2048 {
		return nil, fmt.Errorf("testkit: testdata/rsa2048.pem holds a %T, not an RSA-2048 key", k)
	}
	return rk, nil
}

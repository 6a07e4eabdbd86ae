package testkit_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"os"
	"testing"

	"latchkey/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.MainEngineFree(m)) }

// TestSigningKey: RS256 gives RSA-2048 keys that never repeat in a
// process, the ones generated beforehand first, then generated ones once
// those are out; ES256 gives P-256 keys; another algorithm is refused.
func TestSigningKey(t *testing.T) {
	seen := map[string]bool{}
	for i := range 66 { // the 64 of testdata/rsa2048.pem, then two made
		k, err := testkit.SigningKey("RS256")
		if err != nil {
			t.Fatal(err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok || rk.N.BitLen() != 2048 || rk.Validate() != nil {
			t.Fatalf("key %d: %T, want a valid RSA-2048 key", i, k)
		}
		if n := rk.N.String(); seen[n] {
			t.Fatalf("key %d was handed out before", i)
		} else {
			seen[n] = true
		}
	}
	k, err := testkit.SigningKey("ES256")
	if ek, ok := k.(*ecdsa.PrivateKey); err != nil || !ok || ek.Curve != elliptic.P256() {
		t.Fatalf("ES256: %T, %v; want a P-256 key", k, err)
	}
	if _, err := testkit.SigningKey("HS256"); err == nil {
		t.Fatal("HS256: no error")
	}
}

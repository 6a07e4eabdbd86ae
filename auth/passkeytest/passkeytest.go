// Package passkeytest is a software WebAuthn authenticator for tests only.
//
// It plays both the authenticator and the browser: from the options JSON a
// relying party's start call returns, it makes the PublicKeyCredential JSON
// a browser would send back (PublicKeyCredential.toJSON(): id, rawId, type,
// response with base64url fields). Keys are P-256 (ES256); authenticator
// data carries the rpId hash, the UP/UV/BE/BS/AT flags, a sign counter and,
// at registration, the attested credential data (AAGUID, credential id and
// the COSE EC2 public key); attestation is "none"; CBOR is encoded in the
// CTAP2 canonical form with github.com/fxamacker/cbor/v2.
//
// A Tweak bends one ceremony to provoke the failures a relying party must
// catch: another origin, another rpId hash, a corrupted signature, a sign
// counter that goes backwards. Nothing here is fit for real credentials.
package passkeytest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Authenticator flags (WebAuthn section 6.1, authenticator data).
const (
	FlagUP = 0x01 // user present
	FlagUV = 0x04 // user verified
	FlagBE = 0x08 // backup eligible
	FlagBS = 0x10 // backed up
	FlagAT = 0x40 // attested credential data included
)

// algES256 is the COSE algorithm id of ECDSA with P-256 and SHA-256.
const algES256 = -7

// Authenticator is a software passkey provider bound to one browser
// origin. New gives it passkey-like defaults (a synced platform
// credential); its fields may be changed before a ceremony. It is safe for
// concurrent use.
type Authenticator struct {
	// Origin is what the "browser" reports in clientDataJSON.
	Origin string
	// AAGUID names the authenticator model in attested credential data.
	AAGUID [16]byte
	// UserVerified, BackupEligible and BackedUp set the UV, BE and BS flags.
	UserVerified, BackupEligible, BackedUp bool
	// Transports are reported with a new credential.
	Transports []string
	// Attachment is reported as authenticatorAttachment.
	Attachment string

	mu    sync.Mutex
	creds []*Credential
}

// Credential is a credential the authenticator holds.
type Credential struct {
	ID         []byte
	RPID       string
	UserHandle []byte
	Key        *ecdsa.PrivateKey
	// SignCount is the counter of the last assertion (0 after creation).
	SignCount uint32
}

// IDString is the credential id as base64url without padding, the form
// relying parties list it in.
func (c *Credential) IDString() string { return base64.RawURLEncoding.EncodeToString(c.ID) }

// New returns an authenticator for pages at origin: UV, BE and BS set,
// transports internal and hybrid, platform attachment, a random AAGUID.
func New(origin string) *Authenticator {
	a := &Authenticator{Origin: origin, UserVerified: true, BackupEligible: true, BackedUp: true,
		Transports: []string{"internal", "hybrid"}, Attachment: "platform"}
	rand.Read(a.AAGUID[:])
	return a
}

// Tweak changes one ceremony, to make a response a relying party must
// reject. The zero Tweak changes nothing.
type Tweak struct {
	// Origin replaces the origin in clientDataJSON.
	Origin string
	// RPID is hashed into the authenticator data instead of the options' rpId.
	RPID string
	// Type replaces clientDataJSON's type ("webauthn.create"/"webauthn.get").
	Type string
	// Challenge replaces the options' challenge.
	Challenge []byte
	// SignCount, when set, is the counter an assertion reports (and keeps).
	SignCount *uint32
	// BadSignature corrupts the signature after signing.
	BadSignature bool
	// Credential makes an assertion with this credential, ignoring the
	// options' allow list.
	Credential *Credential
	// UserHandle replaces the assertion's userHandle.
	UserHandle []byte
}

// Credentials returns the credentials created so far, oldest first.
func (a *Authenticator) Credentials() []*Credential {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*Credential(nil), a.creds...)
}

// creationOptions is the part of PublicKeyCredentialCreationOptions the
// authenticator reads.
type creationOptions struct {
	Challenge string `json:"challenge"`
	RP        struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"rp"`
	User struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"user"`
	Params []struct {
		Type string `json:"type"`
		Alg  int    `json:"alg"`
	} `json:"pubKeyCredParams"`
	Exclude    []descriptor   `json:"excludeCredentials"`
	Extensions map[string]any `json:"extensions"`
}

// requestOptions is the part of PublicKeyCredentialRequestOptions the
// authenticator reads.
type requestOptions struct {
	Challenge string       `json:"challenge"`
	RPID      string       `json:"rpId"`
	Allow     []descriptor `json:"allowCredentials"`
}

type descriptor struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// unwrap accepts the options object itself or {publicKey: options}.
func unwrap(options []byte, v any) error {
	var outer struct {
		PublicKey json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal(options, &outer); err != nil {
		return fmt.Errorf("passkeytest: options: %w", err)
	}
	if len(outer.PublicKey) > 0 && string(outer.PublicKey) != "null" {
		options = outer.PublicKey
	}
	if err := json.Unmarshal(options, v); err != nil {
		return fmt.Errorf("passkeytest: options: %w", err)
	}
	return nil
}

// Create answers creation options (navigator.credentials.create) with a
// new credential and returns the browser's PublicKeyCredential JSON. It
// fails like a real authenticator when ES256 is not offered or when it
// already holds a credential in excludeCredentials.
func (a *Authenticator) Create(options []byte, tw ...Tweak) (json.RawMessage, *Credential, error) {
	var o creationOptions
	if err := unwrap(options, &o); err != nil {
		return nil, nil, err
	}
	t := tweak(tw)
	es256 := false
	for _, p := range o.Params {
		es256 = es256 || (p.Type == "public-key" && p.Alg == algES256)
	}
	if !es256 {
		return nil, nil, errors.New("passkeytest: options do not offer ES256")
	}
	challenge, err := decodeB64(o.Challenge)
	if err != nil || len(challenge) == 0 {
		return nil, nil, errors.New("passkeytest: options have no challenge")
	}
	userHandle, err := decodeB64(o.User.ID)
	if err != nil || len(userHandle) == 0 {
		return nil, nil, errors.New("passkeytest: options have no user.id")
	}
	rpID := o.RP.ID
	if rpID == "" {
		rpID = hostOf(a.Origin)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ex := range o.Exclude {
		id, _ := decodeB64(ex.ID)
		for _, c := range a.creds {
			if c.RPID == rpID && bytes.Equal(c.ID, id) {
				return nil, nil, errors.New("passkeytest: InvalidStateError: a credential in excludeCredentials is here")
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	cred := &Credential{ID: randomBytes(32), RPID: rpID, UserHandle: userHandle, Key: key}

	coseKey, err := coseES256(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	attested := append([]byte{}, a.AAGUID[:]...)
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(cred.ID)))
	attested = append(attested, cred.ID...)
	attested = append(attested, coseKey...)
	authData := a.authData(pick(t.RPID, rpID), FlagAT, 0, attested)

	clientData, err := clientDataJSON(pick(t.Type, "webauthn.create"), pickBytes(t.Challenge, challenge), pick(t.Origin, a.Origin))
	if err != nil {
		return nil, nil, err
	}
	attObj, err := ctap2().Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": authData})
	if err != nil {
		return nil, nil, err
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	ext := map[string]any{}
	if v, _ := o.Extensions["credProps"].(bool); v {
		ext["credProps"] = map[string]any{"rk": true}
	}
	id := cred.IDString()
	out, err := json.Marshal(map[string]any{
		"id": id, "rawId": id, "type": "public-key",
		"authenticatorAttachment": a.Attachment,
		"clientExtensionResults":  ext,
		"response": map[string]any{
			"clientDataJSON":     b64(clientData),
			"attestationObject":  b64(attObj),
			"authenticatorData":  b64(authData),
			"publicKey":          b64(spki),
			"publicKeyAlgorithm": algES256,
			"transports":         a.Transports,
		},
	})
	if err != nil {
		return nil, nil, err
	}
	a.creds = append(a.creds, cred)
	return out, cred, nil
}

// Get answers request options (navigator.credentials.get) with an
// assertion and returns the browser's PublicKeyCredential JSON and the
// credential used. It uses the newest credential for the rpId that the
// allow list names (any, for a discoverable request) and advances its
// sign counter.
func (a *Authenticator) Get(options []byte, tw ...Tweak) (json.RawMessage, *Credential, error) {
	var o requestOptions
	if err := unwrap(options, &o); err != nil {
		return nil, nil, err
	}
	t := tweak(tw)
	challenge, err := decodeB64(o.Challenge)
	if err != nil || len(challenge) == 0 {
		return nil, nil, errors.New("passkeytest: options have no challenge")
	}
	rpID := o.RPID
	if rpID == "" {
		rpID = hostOf(a.Origin)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cred := t.Credential
	for i := len(a.creds) - 1; i >= 0 && cred == nil; i-- {
		if c := a.creds[i]; c.RPID == rpID && allowed(o.Allow, c.ID) {
			cred = c
		}
	}
	if cred == nil {
		return nil, nil, errors.New("passkeytest: NotAllowedError: no credential for this request")
	}
	if t.SignCount != nil {
		cred.SignCount = *t.SignCount
	} else {
		cred.SignCount++
	}
	authData := a.authData(pick(t.RPID, rpID), 0, cred.SignCount, nil)
	clientData, err := clientDataJSON(pick(t.Type, "webauthn.get"), pickBytes(t.Challenge, challenge), pick(t.Origin, a.Origin))
	if err != nil {
		return nil, nil, err
	}
	digest := sha256.Sum256(clientData)
	signed := sha256.Sum256(append(append([]byte{}, authData...), digest[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, cred.Key, signed[:])
	if err != nil {
		return nil, nil, err
	}
	if t.BadSignature {
		sig[len(sig)-1] ^= 0x01
	}
	id := cred.IDString()
	out, err := json.Marshal(map[string]any{
		"id": id, "rawId": id, "type": "public-key",
		"authenticatorAttachment": a.Attachment,
		"clientExtensionResults":  map[string]any{},
		"response": map[string]any{
			"clientDataJSON":    b64(clientData),
			"authenticatorData": b64(authData),
			"signature":         b64(sig),
			"userHandle":        b64(pickBytes(t.UserHandle, cred.UserHandle)),
		},
	})
	return out, cred, err
}

// authData builds authenticator data: rpIdHash, flags, counter, and the
// attested credential data when given.
func (a *Authenticator) authData(rpID string, extra byte, count uint32, attested []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	flags := byte(FlagUP) | extra
	if a.UserVerified {
		flags |= FlagUV
	}
	if a.BackupEligible {
		flags |= FlagBE
	}
	if a.BackedUp {
		flags |= FlagBS
	}
	out := append(h[:], flags)
	out = binary.BigEndian.AppendUint32(out, count)
	return append(out, attested...)
}

// coseES256 encodes pub as a COSE_Key: kty EC2, alg ES256, crv P-256, x, y.
func coseES256(pub *ecdsa.PublicKey) ([]byte, error) {
	raw, err := pub.Bytes() // 0x04 || X || Y
	if err != nil {
		return nil, err
	}
	return ctap2().Marshal(map[int]any{1: 2, 3: algES256, -1: 1, -2: raw[1:33], -3: raw[33:65]})
}

func ctap2() cbor.EncMode {
	em, err := cbor.CTAP2EncOptions().EncMode()
	if err != nil {
		panic(err) // fixed options: cannot fail
	}
	return em
}

func clientDataJSON(typ string, challenge []byte, origin string) ([]byte, error) {
	return json.Marshal(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{typ, b64(challenge), origin, false})
}

func allowed(list []descriptor, id []byte) bool {
	if len(list) == 0 {
		return true
	}
	for _, d := range list {
		if got, err := decodeB64(d.ID); err == nil && bytes.Equal(got, id) {
			return true
		}
	}
	return false
}

func tweak(tw []Tweak) Tweak {
	if len(tw) == 0 {
		return Tweak{}
	}
	return tw[0]
}

func pick(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func pickBytes(v, def []byte) []byte {
	if v != nil {
		return v
	}
	return def
}

func hostOf(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func decodeB64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

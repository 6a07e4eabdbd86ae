package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"latchkey/store"
)

// ChallengeLifetime is how long a WebAuthn ceremony may take: its
// challenge is refused after that, and go-webauthn enforces the same
// timeout on its session data.
const ChallengeLifetime = 5 * time.Minute

// Challenge kinds.
const (
	challengeRegister = "register"
	challengeLogin    = "login"
)

// relyingParty returns the project's WebAuthn relying party: RPID(p), the
// project's name, and its allowed origins (or the base URL's origin when
// it has none). A relying party id that is an IP address cannot hold
// passkeys (browsers and go-webauthn refuse it): 400 VALIDATION_ERROR
// naming the fix.
func (s *Service) relyingParty(p *store.Project) (*webauthn.WebAuthn, error) {
	rpID, origins := s.RPID(p), s.rpOrigins(p)
	if _, err := netip.ParseAddr(rpID); err == nil || rpID == "" {
		return nil, Invalid("Passkeys need a domain name as relying party id, not %q: set the project's rpId or allowedOrigins.", rpID)
	}
	timeout := webauthn.TimeoutConfig{Enforce: true, Timeout: ChallengeLifetime, TimeoutUVD: ChallengeLifetime}
	rp, err := webauthn.New(&webauthn.Config{
		RPID: rpID, RPDisplayName: p.Name, RPOrigins: origins,
		Timeouts: webauthn.TimeoutsConfig{Login: timeout, Registration: timeout},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationPreferred,
		},
		// Browsers and password managers add client extension outputs
		// nobody asked for; WebAuthn section 7.1, step 14 lets the relying
		// party ignore them, and none is trusted for anything here.
		ExtensionsUnsolicitedOutputPolicy: protocol.UnsolicitedOutputPolicyIgnore,
	})
	if err != nil {
		return nil, internal(err)
	}
	return rp, nil
}

// rpOrigins returns the origins a ceremony's clientData may name: the
// project's allowed origins, or the base URL's origin. When the rpId is
// "localhost" standing in for a loopback address (see RPID), each
// loopback origin's localhost twin is accepted too, as that is the
// address a browser can use.
func (s *Service) rpOrigins(p *store.Project) []string {
	origins := append([]string(nil), p.AllowedOrigins...)
	if len(origins) == 0 {
		origins = []string{s.baseOrigin()}
	}
	if s.RPID(p) != "localhost" {
		return origins
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || !isLoopbackIP(u.Hostname()) {
			continue
		}
		twin := u.Scheme + "://localhost"
		if port := u.Port(); port != "" {
			twin += ":" + port
		}
		if !contains(origins, twin) {
			origins = append(origins, twin)
		}
	}
	return origins
}

func (s *Service) baseOrigin() string {
	u, err := url.Parse(s.baseURL)
	if err != nil {
		return s.baseURL
	}
	o, _ := canonicalOrigin(u)
	return o
}

func isIP(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

func isLoopbackIP(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// waUser adapts a user and their credentials to webauthn.User. The
// WebAuthn user handle is the user id's bytes.
type waUser struct {
	id, name string
	creds    []webauthn.Credential
}

func (u *waUser) WebAuthnID() []byte                         { return []byte(u.id) }
func (u *waUser) WebAuthnName() string                       { return u.name }
func (u *waUser) WebAuthnDisplayName() string                { return u.name }
func (u *waUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// loadWAUser returns u with its stored credentials.
func loadWAUser(tx store.Tx, u *store.User) (*waUser, error) {
	pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
	if err != nil {
		return nil, err
	}
	wu := &waUser{id: u.ID, name: u.Email}
	for _, pk := range pks {
		var c webauthn.Credential
		if err := json.Unmarshal(pk.Credential, &c); err != nil {
			return nil, err
		}
		wu.creds = append(wu.creds, c)
	}
	return wu, nil
}

// Ceremony is a started WebAuthn ceremony: the id to send back with the
// browser's answer, and the options for navigator.credentials.
type Ceremony struct {
	ChallengeID string
	// Options is go-webauthn's PublicKeyCredentialCreationOptions or
	// PublicKeyCredentialRequestOptions JSON, holding the same object
	// again under "publicKey" so either reading of it works.
	Options json.RawMessage
}

// ceremonyOptions returns opts as JSON with a copy of itself under
// "publicKey".
func ceremonyOptions(opts any) (json.RawMessage, error) {
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["publicKey"] = raw
	return json.Marshal(m)
}

// challengeSession is what a challenge's Session holds: go-webauthn's
// session data and, for a passkey added from a session, that session's
// id (a challenge is finished by the session that started it only).
type challengeSession struct {
	webauthn.SessionData
	BoundSession string `json:"latchkeySession,omitempty"`
}

// putChallenge stores ch (project, kind and owner set by the caller) with
// a fresh random id, a 5-minute expiry (from when it started: ch's
// ExpiresAt minus ChallengeLifetime, when the caller set it) and
// go-webauthn's session data bound to the session bound ("" for none),
// and returns the ceremony for opts.
func (s *Service) putChallenge(ctx context.Context, ch *store.Challenge, sess *webauthn.SessionData, bound string, opts any) (*Ceremony, error) {
	ch.ID = uuid.NewString() // random: the id is the only handle on it
	if ch.ExpiresAt.IsZero() {
		ch.ExpiresAt = s.now().Add(ChallengeLifetime).UTC()
	}
	cs := challengeSession{BoundSession: bound}
	if sess != nil {
		cs.SessionData = *sess
	}
	var err error
	if ch.Session, err = json.Marshal(cs); err != nil {
		return nil, internal(err)
	}
	cer := &Ceremony{ChallengeID: ch.ID}
	if cer.Options, err = ceremonyOptions(opts); err != nil {
		return nil, internal(err)
	}
	if err := s.db.Update(ctx, func(tx store.Tx) error { return tx.PutChallenge(ch) }); err != nil {
		return nil, internal(err)
	}
	return cer, nil
}

// takeChallenge consumes challenge id of kind inside tx and returns its
// session data. A challenge of another project or kind, or one belongs
// refuses (given the session it is bound to, "" for none), is left
// alone; an expired one is deleted. All of these, and an unknown id,
// are 400 CHALLENGE_EXPIRED. A challenge is consumed before its
// ceremony is verified, so a failed verify cannot be retried.
func (s *Service) takeChallenge(tx store.Tx, p *store.Project, id, kind string, belongs func(ch *store.Challenge, bound string) bool) (*store.Challenge, *webauthn.SessionData, error) {
	ch, err := tx.Challenge(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrChallengeExpired
	} else if err != nil {
		return nil, nil, err
	}
	if ch.ProjectID != p.ID || ch.Kind != kind {
		return nil, nil, ErrChallengeExpired
	}
	var sess challengeSession
	if err := json.Unmarshal(ch.Session, &sess); err != nil {
		return nil, nil, err
	}
	if belongs != nil && !belongs(ch, sess.BoundSession) {
		return nil, nil, ErrChallengeExpired
	}
	if err := tx.DeleteChallenge(id); err != nil {
		return nil, nil, err
	}
	if !s.now().Before(ch.ExpiresAt) {
		return nil, nil, ErrChallengeExpired
	}
	return ch, &sess.SessionData, nil
}

// checkFinish validates a verify call's body before anything is
// consumed: a challengeId and a credential that is a JSON object, else
// 400 VALIDATION_ERROR.
func checkFinish(challengeID string, credential json.RawMessage) error {
	if challengeID == "" {
		return Invalid("challengeId is required.")
	}
	if len(credential) == 0 || credential[0] != '{' {
		return ErrInvalidCredential.With("credential must be the browser's PublicKeyCredential JSON object.")
	}
	return nil
}

// ceremonyRefusal is the 400 INVALID_CREDENTIAL for a ceremony that
// go-webauthn refused with err. When the browser's origin is not one the
// project allows, or the authenticator worked for another relying party
// id, the error says so (these are set-up mistakes, not attacks one must
// keep quiet about) and a warning is logged with the project, the origin
// and what was expected; otherwise the generic text stands, with err as
// the cause.
func (s *Service) ceremonyRefusal(p *store.Project, sess *webauthn.SessionData, ceremony, origin string, rpIDHash []byte, err error) error {
	origin = printable(origin, 200)
	origins := sess.GetOrigins(s.rpOrigins(p))
	if !protocol.IsOriginInHaystack(origin, origins) {
		s.log.Warn("passkey refused: origin not allowed", "project", p.ID, "ceremony", ceremony, "origin", origin, "allowed_origins", origins)
		what := "The passkey was created for origin %s, which is not an allowed origin of this project."
		if ceremony == "login" {
			what = "The passkey sign-in came from origin %s, which is not an allowed origin of this project."
		}
		return ErrInvalidCredential.With(fmt.Sprintf(what, origin)).Because(err)
	}
	rpID := sess.GetRelyingPartyID(s.RPID(p))
	if want := sha256.Sum256([]byte(rpID)); len(rpIDHash) > 0 && !bytes.Equal(rpIDHash, want[:]) {
		s.log.Warn("passkey refused: relying party id does not match", "project", p.ID, "ceremony", ceremony, "origin", origin, "rp_id", rpID)
		return ErrInvalidCredential.With(fmt.Sprintf("The passkey is for another relying party id than this project's (%s): set the project's rpId to the domain of the page at %s, or open the page on %s.", rpID, origin, rpID)).Because(err)
	}
	return ErrInvalidCredential.Because(err)
}

// printable returns s without control characters, cut to at most n
// bytes, for an error text or a log line.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

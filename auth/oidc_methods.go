package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"

	"latchkey/store"
)

// The hosted sign-in's other ways in (docs/oidc.md, "Sign-in pages"),
// each through the API's own use case, with its throttles, lockouts,
// risk checks and events, and each making the same session as the email
// code (method "oidc:<client name>") proven by its own method: a magic
// link (link: amr otp), a passkey (hwk, or swk when synced), a provider (fed); and the
// second factors besides TOTP: an SMS code on the session, or a backup
// code, which, as in the API, is a sign-in of its own.

// Paths of the hosted pages' other ways in, under an issuer.
const (
	// OIDCLinkPath: GET, the magic link's confirm page; POST, its
	// confirmation, which signs in.
	OIDCLinkPath = "/login/link"
	// OIDCSendLinkPath: POST, email a magic link instead of a code.
	OIDCSendLinkPath = "/login/send-link"
	// OIDCPasskeyPath: POST, a passkey's assertion signs in.
	OIDCPasskeyPath = "/login/passkey"
	// OIDCProviderPath: POST starts a provider's sign-in; GET is where
	// the provider's sign-in returns.
	OIDCProviderPath = "/login/provider"
	// OIDCSendSMSPath: POST, text a code to the enrolled phone.
	OIDCSendSMSPath = "/login/mfa/sms"
)

// Second factors of the hosted pages.
const (
	OIDCFactorTOTP   = "totp"
	OIDCFactorSMS    = "sms"
	OIDCFactorBackup = "backup"
	// OIDCFactorEnroll: TOTP set up on the page, for a client that
	// requires a second factor and a user who has none; its code is
	// checked as TOTP's (VerifyTOTP confirms the enrolment).
	OIDCFactorEnroll = "enroll"
)

// OIDCSendLink emails a magic link for request id to email: SendMagicLink's
// checks, throttles and events; the link leads to the request's confirm
// page (OIDCLinkPath) rather than the API's.
func (s *Service) OIDCSendLink(ctx context.Context, projectID, id, email string, m Meta) error {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return err
	}
	return s.sendMagicLink(ctx, sr.Project, email, "", func(token string) string {
		return s.OIDCIssuer(projectID) + OIDCLinkPath + "?authRequestID=" + url.QueryEscape(id) + "&token=" + url.QueryEscape(token)
	}, m)
}

// OIDCVerifyLink consumes a magic link on request id's confirm page and
// signs its user in (VerifyMagicLink's checks and events): a new
// session, method "oidc:<client name>", proven by the link. A link of
// another project is 401 INVALID_TOKEN and stays unused.
func (s *Service) OIDCVerifyLink(ctx context.Context, projectID, id, token string, m Meta) (*Login, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	return s.verifyMagicLink(ctx, token, "", projectID,
		loginAs{method: oidcMethodPrefix + sr.ClientName, proof: amrLink, noRefresh: true}, m)
}

// OIDCPasskeys says whether the project's pages offer passkeys: the
// page's origin (the base URL's) must be one the project's ceremonies
// accept (one of its allowedOrigins, or the base URL's own when it has
// none), and its host the project's rpId or under it. When not, ok is
// false and why says what to change (for the log).
func (s *Service) OIDCPasskeys(p *store.Project) (ok bool, why string) {
	rpID, origin := s.RPID(p), s.baseOrigin()
	if rpID == "" || isIP(rpID) {
		return false, "the project's relying party id is not a domain name"
	}
	host := hostOfOrigin(origin)
	if isLoopbackIP(host) && rpID == "localhost" {
		return false, "the base URL is a loopback address: browsers keep passkeys for a domain name (use http://localhost)"
	}
	if host != rpID && !strings.HasSuffix(host, "."+rpID) {
		return false, "the base URL's host " + host + " is not the project's rpId " + rpID + " nor under it"
	}
	if !contains(s.rpOrigins(p), origin) {
		return false, "the base URL's origin " + origin + " is not one of the project's allowedOrigins"
	}
	return true, ""
}

// passkeyWarned keeps the projects whose pages left passkeys out, so
// that the log says why once per project and process.
var passkeyWarned sync.Map

// OIDCBeginPasskey starts a discoverable passkey sign-in for request
// id's page (BeginPasskeyLogin without an address: the browser offers
// the passkeys it holds for the rpId). It answers nil, nil when the
// project's pages offer no passkeys, and logs why once.
func (s *Service) OIDCBeginPasskey(ctx context.Context, projectID, id string, m Meta) (*Ceremony, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	if ok, why := s.OIDCPasskeys(sr.Project); !ok {
		if _, seen := passkeyWarned.LoadOrStore(projectID, true); !seen {
			s.log.Info("oidc sign-in page offers no passkeys", "project", projectID, "why", why)
		}
		return nil, nil
	}
	return s.BeginPasskeyLogin(ctx, sr.Project, "", m)
}

// OIDCFinishPasskey verifies the page's passkey assertion for request
// id and signs its user in (FinishPasskeyLogin's checks and events): a
// new session, method "oidc:<client name>", proven by the passkey.
func (s *Service) OIDCFinishPasskey(ctx context.Context, projectID, id, challengeID string, credential json.RawMessage, m Meta) (*Login, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	return s.finishPasskeyLogin(ctx, sr.Project, challengeID, credential,
		loginAs{method: oidcMethodPrefix + sr.ClientName, proof: amrPasskey, noRefresh: true}, m)
}

// OIDCProvider is a provider button of the sign-in page.
type OIDCProvider struct {
	// Name is the provider's name in the project (the form's value).
	Name string
	// Label is what the button says.
	Label string
}

// OIDCProviders returns the project's providers, for the sign-in page's
// buttons.
func OIDCProviders(p *store.Project) []OIDCProvider {
	out := make([]OIDCProvider, 0, len(p.Providers))
	for _, pr := range p.Providers {
		out = append(out, OIDCProvider{Name: pr.Name, Label: providerLabel(pr)})
	}
	return out
}

// providerLabel names a provider on a button: the well-known types by
// their company's name, others by their name in the project.
func providerLabel(pr store.Provider) string {
	switch pr.Type {
	case "github":
		return "GitHub"
	case "google":
		return "Google"
	case "apple":
		return "Apple"
	case "microsoft":
		return "Microsoft"
	}
	if pr.Name == "" {
		return "provider"
	}
	return strings.ToUpper(pr.Name[:1]) + pr.Name[1:]
}

// OIDCStartProvider starts request id's sign-in with the project's
// provider name (StartOAuth's checks and events) and returns the
// provider's authorization URL. The provider returns the browser to the
// request's page (OIDCProviderPath), and the sign-in is bound to the
// browser by verifier, a secret the browser keeps (a cookie): only its
// holder can finish it (OIDCFinishProvider).
func (s *Service) OIDCStartProvider(ctx context.Context, projectID, id, name, verifier string, m Meta) (string, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(verifier))
	back := s.OIDCIssuer(projectID) + OIDCProviderPath + "?authRequestID=" + url.QueryEscape(id)
	return s.startOAuth(ctx, sr.Project, name, back, base64.RawURLEncoding.EncodeToString(sum[:]), true, m)
}

// OIDCFinishProvider exchanges the one-time code the provider's sign-in
// returned to request id's page, with the browser's verifier, and signs
// the user in (OAuthExchange's linking rules, checks and events): a new
// session, method "oidc:<client name>", proven by the provider.
func (s *Service) OIDCFinishProvider(ctx context.Context, projectID, id, code, verifier string, m Meta) (*Login, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	l, _, err := s.oauthExchange(ctx, sr.Project, code, verifier, func(provider string) loginAs {
		return loginAs{method: oidcMethodPrefix + sr.ClientName, proof: "oauth:" + provider, noRefresh: true}
	}, m)
	return l, err
}

// OIDCFactors is what the second-factor page offers the browser's
// session: its user's factors, and backup codes.
type OIDCFactors struct {
	TOTP, SMS bool
	// Backup: the user has backup codes and the client does not require
	// a second factor (a backup-code sign-in is the factors' recovery,
	// not a second factor).
	Backup bool
	// Enroll: the client requires a second factor and the user has
	// neither TOTP nor SMS: the page offers to set up TOTP
	// (OIDCEnrollTOTP).
	Enroll bool
}

// OIDCSecondFactors returns what the second-factor page of request id
// offers the session pr.
func (s *Service) OIDCSecondFactors(ctx context.Context, projectID, id string, pr *Principal) (OIDCFactors, error) {
	var f OIDCFactors
	err := s.db.View(ctx, func(tx store.Tx) error {
		r, err := s.liveAuthRequest(tx, projectID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrAuthRequestGone
		} else if err != nil {
			return err
		}
		c, err := tx.OIDCClient(projectID, r.ClientID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrAuthRequestGone
		} else if err != nil {
			return err
		}
		_, en, err := tx.SessionEnrolled(pr.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		f.TOTP, f.SMS = en.TOTP, en.SMS
		f.Enroll = c.RequireMFA && !en.TOTP && !en.SMS
		if !c.RequireMFA {
			f.Backup, err = hasBackupCode(tx, pr.UserID)
		}
		return err
	})
	if err != nil {
		return f, internal(err)
	}
	return f, nil
}

// OIDCEnrollTOTP starts setting up TOTP for the session pr on request
// id's second-factor page, when the page offers it (OIDCFactors.Enroll):
// EnrollTOTP's rules, events and answer (a new pending secret each time;
// the page's code confirms it through OIDCSecondFactor). Each start is a
// write counted against the session's limit, as the API's and the
// account page's are.
func (s *Service) OIDCEnrollTOTP(ctx context.Context, projectID, id string, pr *Principal, m Meta) (*TOTPEnrollment, error) {
	f, err := s.OIDCSecondFactors(ctx, projectID, id, pr)
	if err != nil {
		return nil, err
	}
	if !f.Enroll {
		return nil, errNoSecondFactor
	}
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return nil, err
	}
	if err := s.countWrite(pr, p, s.now().Unix()); err != nil {
		return nil, err
	}
	return s.EnrollTOTP(ctx, pr, m)
}

// OIDCSendSMS texts a code to the enrolled phone of the session pr, for
// request id's second factor (SendSMSCode's throttles and events).
func (s *Service) OIDCSendSMS(ctx context.Context, projectID, id string, pr *Principal, m Meta) error {
	if _, err := s.OIDCSignInRequest(ctx, projectID, id); err != nil {
		return err
	}
	return s.SendSMSCode(ctx, pr, "", m)
}

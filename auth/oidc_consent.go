package auth

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/store"
)

// Consent to third-party clients (docs/oidc.md, "Consent"). A client
// that is not first-party gets the user's data only once the user has
// allowed it on the consent page: which scopes, in plain words. The
// answer is remembered per user and client (store.OIDCConsent, every
// scope allowed so far), so a later sign-in that asks for no more skips
// the page; a client asking for a scope not yet allowed, or sending
// prompt=consent, asks again. Allowing emits oidc.consent_granted in the
// same transaction. A device's confirmation page (the client, its scopes
// in plain words, Allow or Deny) is its consent page: allowing a
// third-party client's device records the consent too. offline_access
// is a scope like the others: a
// third-party client gets a refresh token only once the user allowed
// it. The user (account page) or an operator (admin API) revokes a
// consent: the client's grants for the user are revoked with it (every
// access and refresh token they gave), and the next sign-in asks again.

// OIDCConsentPath is the consent page, under an issuer.
const OIDCConsentPath = "/consent"

// EventConsentGranted is the webhook event of a consent given.
const EventConsentGranted = "oidc.consent_granted"

// ErrConsentNotFound: the user has not allowed that client (or the
// consent was revoked).
var ErrConsentNotFound = newErr("CONSENT_NOT_FOUND", "", "The user has no consent for this client.")

// errConsentNotHere refuses the consent page to a browser whose session
// did not sign in for the request.
var errConsentNotHere = ErrAuthRequestGone.With("This consent request is not for this browser's sign-in. Go back to the application and sign in again.")

// scopeWords says in plain words what each scope the provider knows
// gives the client; a client's own scopes are shown by name.
var scopeWords = map[string]string{
	oidc.ScopeOpenID:        "Know who you are: your account identifier",
	oidc.ScopeEmail:         "See your email address and whether it is verified",
	oidc.ScopeProfile:       "See your name",
	"groups":                "See the groups you belong to",
	oidc.ScopeOfflineAccess: "Stay connected to your account while you are away, until you revoke it",
}

// ScopeText is a scope with what it gives, in plain words.
type ScopeText struct {
	Scope string
	Text  string
}

// scopeTexts returns scopes in plain words, in order.
func scopeTexts(scopes []string) []ScopeText {
	out := make([]ScopeText, 0, len(scopes))
	for _, sc := range scopes {
		t, ok := scopeWords[sc]
		if !ok {
			t = "Use the permission “" + sc + "”"
		}
		out = append(out, ScopeText{Scope: sc, Text: t})
	}
	return out
}

// needsConsent reports whether request r of client c, answered by the
// user userID, must ask the user first: c is third-party, and the
// client sent prompt=consent or asks for a scope the user has not
// allowed it.
func needsConsent(tx store.Tx, r *store.OIDCAuthRequest, c *store.OIDCClient, userID string) (bool, error) {
	if c.FirstParty || isDeviceSignIn(r.ID) {
		// A device's sign-in goes back to the device page, whose
		// confirmation (the client and its scopes, Allow or Deny) is
		// the user's answer.
		return false, nil
	}
	if slices.Contains(r.Prompt, oidc.PromptConsent) {
		return true, nil
	}
	have, err := tx.OIDCConsent(r.ProjectID, userID, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	for _, sc := range r.Scopes {
		if !slices.Contains(have.Scopes, sc) {
			return true, nil
		}
	}
	return false, nil
}

// OIDCConsentAsk is a consent request as the consent page shows it.
type OIDCConsentAsk struct {
	ID         string
	ClientName string
	Scopes     []ScopeText
	PromptNone bool
	// ReturnTo is, for a client that registered itself (dynamic
	// registration), where the answer sends the browser: its redirect
	// URI's host (returnHost); "" for a client the operator created.
	ReturnTo string
}

// consentRequest returns request id and its client inside tx when the
// browser's session pr signed in for it and it waits for the user's
// consent.
func (s *Service) consentRequest(tx store.Tx, projectID, id string, pr *Principal) (*store.OIDCAuthRequest, *store.OIDCClient, error) {
	r, err := s.liveAuthRequest(tx, projectID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrAuthRequestGone
	} else if err != nil {
		return nil, nil, err
	}
	if pr == nil || r.Done || r.UserID == "" || r.SessionID != pr.SessionID || r.UserID != pr.UserID {
		return nil, nil, errConsentNotHere
	}
	c, err := tx.OIDCClient(projectID, r.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrAuthRequestGone
	}
	return r, c, err
}

// OIDCConsentRequest returns request id for the consent page of the
// browser whose session is pr: the client's name and the scopes it asks
// for, in plain words. errConsentNotHere (404) when the request was not
// signed in by that session or needs no consent.
func (s *Service) OIDCConsentRequest(ctx context.Context, projectID, id string, pr *Principal) (*OIDCConsentAsk, error) {
	var out *OIDCConsentAsk
	err := s.db.View(ctx, func(tx store.Tx) error {
		r, c, err := s.consentRequest(tx, projectID, id, pr)
		if err != nil {
			return err
		}
		out = &OIDCConsentAsk{ID: r.ID, ClientName: c.Name, Scopes: scopeTexts(r.Scopes),
			PromptNone: slices.Contains(r.Prompt, oidc.PromptNone)}
		if c.Registered {
			out.ReturnTo = returnHost(r.RedirectURI)
		}
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// OIDCDecideConsent records the user's answer to request id, from the
// browser whose session is pr, in one transaction. Allowing remembers
// the request's scopes with those allowed before (the consent's
// GrantedAt stays, UpdatedAt is now), answers the request (OIDCStepDone:
// its code may be issued) and emits oidc.consent_granted. Denying
// changes nothing: the caller answers the client access_denied (false).
func (s *Service) OIDCDecideConsent(ctx context.Context, projectID, id string, pr *Principal, allow bool) (bool, error) {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		r, c, err := s.consentRequest(tx, projectID, id, pr)
		if err != nil || !allow {
			return err
		}
		r.Done = true
		if err := tx.PutOIDCAuthRequest(r); err != nil {
			return err
		}
		return s.grantConsent(tx, projectID, r.UserID, c, r.Scopes)
	})
	if err != nil {
		return false, internal(err)
	}
	return allow, nil
}

// grantConsent records inside tx that user userID allowed client c
// scopes (added to those allowed before: GrantedAt stays, UpdatedAt is
// now) and emits oidc.consent_granted.
func (s *Service) grantConsent(tx store.Tx, projectID, userID string, c *store.OIDCClient, scopes []string) error {
	now := s.now().UTC()
	con, err := tx.OIDCConsent(projectID, userID, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		con, err = &store.OIDCConsent{ProjectID: projectID, UserID: userID, ClientID: c.ID, GrantedAt: now}, nil
	}
	if err != nil {
		return err
	}
	for _, sc := range scopes {
		if !slices.Contains(con.Scopes, sc) {
			con.Scopes = append(con.Scopes, sc)
		}
	}
	con.UpdatedAt = now
	if err := tx.PutOIDCConsent(con); err != nil {
		return err
	}
	return s.emit(tx, projectID, EventConsentGranted, map[string]any{"user_id": userID, "client_id": c.ID,
		"client_name": c.Name, "scopes": orEmpty(scopes)})
}

// ConsentView is a user's consent to a client, as the admin API and the
// account page show it.
type ConsentView struct {
	ClientID   string    `json:"clientId"`
	ClientName string    `json:"clientName"`
	Scopes     []string  `json:"scopes"`
	GrantedAt  time.Time `json:"grantedAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// consentUser returns the project of user userID inside tx: projectID
// when the user is one of its users ("": the user's own project);
// PROJECT_NOT_FOUND for an unknown project, USER_NOT_FOUND for an
// unknown user or another project's.
func consentUser(tx store.Tx, projectID, userID string) (string, error) {
	if projectID != "" {
		if _, err := tx.Project(projectID); errors.Is(err, store.ErrNotFound) {
			return "", ErrProjectNotFound
		} else if err != nil {
			return "", err
		}
	}
	u, err := tx.User(userID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && projectID != "" && u.ProjectID != projectID) {
		return "", ErrUserNotFound
	} else if err != nil {
		return "", err
	}
	return u.ProjectID, nil
}

// UserConsents returns the consents of projectID's user userID (with
// projectID "", of user userID), in client id order; never nil.
// PROJECT_NOT_FOUND, USER_NOT_FOUND.
func (s *Service) UserConsents(ctx context.Context, projectID, userID string) ([]ConsentView, error) {
	var out []ConsentView
	err := s.db.View(ctx, func(tx store.Tx) error {
		projectID, err := consentUser(tx, projectID, userID)
		if err != nil {
			return err
		}
		out, err = consentViews(tx, projectID, userID)
		return err
	})
	if err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// consentViews reads the consents of projectID's user userID inside
// tx, with their clients' names, in client id order; never nil.
func consentViews(tx store.Tx, projectID, userID string) ([]ConsentView, error) {
	list, err := tx.OIDCUserConsents(projectID, userID)
	if err != nil {
		return nil, err
	}
	out := make([]ConsentView, 0, len(list))
	for _, c := range list {
		v := ConsentView{ClientID: c.ClientID, Scopes: orEmpty(c.Scopes), GrantedAt: c.GrantedAt, UpdatedAt: c.UpdatedAt}
		if cl, err := tx.OIDCClient(projectID, c.ClientID); err == nil {
			v.ClientName = cl.Name
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// RevokeConsent revokes the consent of projectID's user userID (with
// projectID "", of user userID) to client clientID, in one transaction: the consent goes, and every
// grant the client holds for the user is revoked (its access and
// refresh tokens refused from then on); the next sign-in with the
// client asks for consent again. PROJECT_NOT_FOUND, USER_NOT_FOUND,
// CONSENT_NOT_FOUND.
func (s *Service) RevokeConsent(ctx context.Context, projectID, userID, clientID string) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		projectID, err := consentUser(tx, projectID, userID)
		if err != nil {
			return err
		}
		if _, err := tx.OIDCConsent(projectID, userID, clientID); errors.Is(err, store.ErrNotFound) {
			return ErrConsentNotFound
		} else if err != nil {
			return err
		}
		if err := tx.DeleteOIDCConsent(projectID, userID, clientID); err != nil {
			return err
		}
		grants, err := tx.OIDCUserGrants(projectID, userID)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		for _, g := range grants {
			if g.ClientID != clientID || !g.RevokedAt.IsZero() {
				continue
			}
			g.RevokedAt, g.RevokedFor = now, "consent revoked"
			s.oidcTokensChanged(tx)
			if err := tx.PutOIDCGrant(g); err != nil {
				return err
			}
		}
		return nil
	})
	return internal(err)
}

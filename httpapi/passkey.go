package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

type ceremonyResponse struct {
	Success     bool   `json:"success"`
	ChallengeID string `json:"challengeId"`
	Options     any    `json:"options"`
}

type passkeyFinish struct {
	ChallengeID string          `json:"challengeId"`
	Credential  json.RawMessage `json:"credential"`
}

// keyOrSession authenticates a route that takes a user JWT or, for
// sign-up, an API key: the token's prefix decides (sk_ = key). Both
// answer browsers with CORS headers for the caller's project.
func (s *Server) keyOrSession(w http.ResponseWriter, r *http.Request) (*auth.Caller, *auth.Principal, error) {
	tok, _ := auth.ParseBearer(r.Header.Get("Authorization"))
	if tok == "" || strings.HasPrefix(tok, "sk_") {
		c, err := s.authKey(w, r)
		if err != nil {
			s.allowOrigin(w, r, "")
			return nil, nil, err
		}
		s.allowOrigin(w, r, c.Project.ID)
		return c, nil, nil
	}
	pr, err := s.authSession(w, r)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.auth.Project(r.Context(), pr.ProjectID)
	if err != nil {
		return nil, nil, auth.ErrInvalidSession
	}
	return &auth.Caller{Project: p}, pr, nil
}

func (s *Server) passkeyRegisterStart(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	c, pr, err := s.keyOrSession(w, r)
	if err != nil {
		return err
	}
	var in struct {
		Email string `json:"email"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	cer, err := s.auth.BeginPasskeyRegistration(r.Context(), c.Project, pr, in.Email, s.meta(r, pr == nil))
	if err != nil {
		return err
	}
	return ok(w, ceremonyResponse{true, cer.ChallengeID, cer.Options})
}

func (s *Server) passkeyRegisterVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	c, pr, err := s.keyOrSession(w, r)
	if err != nil {
		return err
	}
	var in passkeyFinish
	if err := decode(w, r, &in); err != nil {
		return err
	}
	reg, err := s.auth.FinishPasskeyRegistration(r.Context(), c.Project, pr, in.ChallengeID, in.Credential, s.meta(r, pr == nil))
	if err != nil {
		return err
	}
	if reg.Login == nil {
		return ok(w, struct {
			Success      bool   `json:"success"`
			CredentialID string `json:"credentialId"`
		}{true, reg.CredentialID})
	}
	return ok(w, struct {
		loginResult
		CredentialID string `json:"credentialId"`
		DeviceToken  string `json:"deviceToken"`
		IsNewUser    bool   `json:"isNewUser"`
	}{newLoginResult(reg.Login), reg.CredentialID, reg.Login.DeviceToken, true})
}

func (s *Server) passkeyLoginStart(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in struct {
		Email string `json:"email"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	cer, err := s.auth.BeginPasskeyLogin(r.Context(), c.Project, in.Email, s.meta(r, true))
	if err != nil {
		return err
	}
	return ok(w, ceremonyResponse{true, cer.ChallengeID, cer.Options})
}

func (s *Server) passkeyLoginVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in passkeyFinish
	if err := decode(w, r, &in); err != nil {
		return err
	}
	l, err := s.auth.FinishPasskeyLogin(r.Context(), c.Project, in.ChallengeID, in.Credential, s.meta(r, true))
	if err != nil {
		return err
	}
	return ok(w, struct {
		loginResult
		DeviceToken string `json:"deviceToken"`
	}{newLoginResult(l), l.DeviceToken})
}

type passkeyList struct {
	Success  bool               `json:"success"`
	Passkeys []auth.PasskeyView `json:"passkeys"`
}

func (s *Server) listPasskeys(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	if _, err := s.auth.SessionUser(r.Context(), pr); err != nil {
		return err
	}
	list, err := s.auth.Passkeys(r.Context(), pr.ProjectID, pr.UserID)
	if err != nil {
		return err
	}
	return ok(w, passkeyList{true, list})
}

func (s *Server) listPasskeysByExternal(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	uid, err := s.auth.UserIDByExternal(r.Context(), c.Project.ID, r.URL.Query().Get("externalUserId"))
	if err != nil {
		return err
	}
	list, err := s.auth.Passkeys(r.Context(), c.Project.ID, uid)
	if err != nil {
		return err
	}
	return ok(w, passkeyList{true, list})
}

// deletePasskey serves DELETE /passkeys/:credentialId (user JWT) and
// DELETE /passkeys/by-external/:credentialId (API key) from one
// catch-all, as httprouter cannot mix both in one path segment.
func (s *Server) deletePasskey(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	rest := strings.TrimPrefix(p.ByName("rest"), "/")
	if id, found := strings.CutPrefix(rest, "by-external/"); found && id != "" && !strings.Contains(id, "/") {
		c, err := s.byExternalKey(w, r)
		if err != nil {
			return err
		}
		uid, err := s.auth.UserIDByExternal(r.Context(), c.Project.ID, r.URL.Query().Get("externalUserId"))
		if err != nil {
			if errors.Is(err, auth.ErrUserNotFound) {
				return auth.ErrPasskeyNotFound
			}
			return err
		}
		if err := s.auth.DeletePasskey(r.Context(), c.Project.ID, uid, id, s.meta(r, true)); err != nil {
			return err
		}
		return ok(w, nil)
	}
	if rest == "" || strings.Contains(rest, "/") {
		return auth.ErrNotFound
	}
	pr, err := s.authSession(w, r)
	if err != nil {
		return err
	}
	if err := s.auth.DeleteSessionPasskey(r.Context(), pr, rest, s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, nil)
}

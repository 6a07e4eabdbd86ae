package httpapi

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

func (s *Server) health(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if !s.ready() {
		writeJSON(w, http.StatusServiceUnavailable, envelope{Error: "Starting.", Code: "UNAVAILABLE"})
		return nil
	}
	return ok(w, struct {
		Success bool   `json:"success"`
		Status  string `json:"status"`
	}{true, "ok"})
}

type userResponse struct {
	Success bool             `json:"success"`
	User    auth.AccountUser `json:"user"`
}

// me answers with the project's companyId for an API key, or the user for
// a session token; the token's prefix decides (sk_ = key). Only the
// session-token answer carries CORS headers.
func (s *Server) me(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	tok, _ := auth.ParseBearer(r.Header.Get("Authorization"))
	if tok == "" || strings.HasPrefix(tok, "sk_") {
		c, err := s.authKey(w, r)
		if err != nil {
			return err
		}
		return ok(w, struct {
			Success   bool   `json:"success"`
			CompanyID string `json:"companyId"`
		}{true, c.Project.CompanyID})
	}
	pr, err := s.authSession(w, r)
	if err != nil {
		return err
	}
	return s.getUser(w, r, p, pr)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	u, err := s.auth.SessionUser(r.Context(), pr)
	if err != nil {
		return err
	}
	return ok(w, userResponse{true, auth.ViewAccount(u)})
}

func (s *Server) patchUser(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in auth.UserPatch
	if err := decode(w, r, &in); err != nil {
		return err
	}
	up, err := s.auth.UpdateUser(r.Context(), pr, in, s.meta(r, false))
	if err != nil {
		return err
	}
	var pending *string
	if up.PendingEmail != "" {
		pending = &up.PendingEmail
	}
	return ok(w, struct {
		userResponse
		PendingEmail *string `json:"pendingEmail"`
	}{userResponse{true, auth.ViewAccount(up.User)}, pending})
}

// emailSend is POST /user/email/send: a code to the current address.
func (s *Server) emailSend(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct {
		Locale string `json:"locale"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	m := s.meta(r, false)
	if in.Locale != "" {
		m.Locale = in.Locale
	}
	if err := s.auth.SendAddressCode(r.Context(), pr, m); err != nil {
		return err
	}
	return ok(w, nil)
}

// emailVerify is POST /user/email/verify: confirms the pending address
// (the current one, or a new one from PATCH /user).
func (s *Server) emailVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct {
		Code   string `json:"code"`
		Locale string `json:"locale"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	m := s.meta(r, false)
	if in.Locale != "" {
		m.Locale = in.Locale
	}
	u, err := s.auth.VerifyAddress(r.Context(), pr, in.Code, m)
	if err != nil {
		return err
	}
	return ok(w, userResponse{true, auth.ViewAccount(u)})
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	if err := s.auth.DeleteUser(r.Context(), pr); err != nil {
		return err
	}
	return ok(w, nil)
}

// getSession is GET /session: the token's session, and how it was
// proven, as the token's check found them (from the store's memory for
// a session it knows: no transaction).
func (s *Server) getSession(w http.ResponseWriter, _ *http.Request, pr *auth.Principal, sp auth.SessionProofs) error {
	type session struct {
		ID                  string   `json:"id"`
		UserID              string   `json:"userId"`
		IssuedAt            int64    `json:"issuedAt"`
		ExpiresAt           int64    `json:"expiresAt"`
		AMR                 []string `json:"amr"`
		SecondFactorPending bool     `json:"secondFactorPending"`
	}
	return ok(w, struct {
		Success bool    `json:"success"`
		Session session `json:"session"`
	}{true, session{pr.SessionID, pr.UserID, pr.IssuedAt, pr.ExpiresAt, sp.AMR, sp.SecondFactorPending}})
}

// logout ends this session, or with {scope:"others"} every other session
// of the user, or with {scope:"all"} all of them. No body is {}.
func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct {
		Scope string `json:"scope"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := s.auth.Logout(r.Context(), pr, in.Scope); err != nil {
		return err
	}
	return ok(w, nil)
}

// userSession is a session in the user's own list: current marks the
// session of the calling token.
type userSession struct {
	auth.SessionView
	Current bool `json:"current"`
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	views, err := s.auth.Sessions(r.Context(), pr)
	if err != nil {
		return err
	}
	out := make([]userSession, len(views))
	for i, v := range views {
		out[i] = userSession{v, v.ID == pr.SessionID}
	}
	return ok(w, struct {
		Success  bool          `json:"success"`
		Sessions []userSession `json:"sessions"`
	}{true, out})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, p httprouter.Params, pr *auth.Principal) error {
	if err := s.auth.RevokeSession(r.Context(), pr, p.ByName("id")); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	keys, err := s.auth.JWKS(r.Context(), p.ByName("projectId"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	data := struct {
		Success bool       `json:"success"`
		Keys    []auth.JWK `json:"keys"`
	}{true, keys}
	writeJSON(w, http.StatusOK, data)
	return nil
}

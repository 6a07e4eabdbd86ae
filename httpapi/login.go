package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// loginResult holds the fields every login result carries: the
// contract's success, token and userId, user and companyId, and how the
// session was proven (amr, secondFactorPending). Each login endpoint
// embeds it and adds its own.
type loginResult struct {
	Success             bool          `json:"success"`
	Token               string        `json:"token"`
	UserID              string        `json:"userId"`
	User                auth.UserView `json:"user"`
	CompanyID           *string       `json:"companyId"`
	AMR                 []string      `json:"amr"`
	SecondFactorPending bool          `json:"secondFactorPending"`
	// RefreshToken buys the session a new token (POST /session/refresh).
	RefreshToken string `json:"refreshToken"`
}

func newLoginResult(l *auth.Login) loginResult {
	uv := auth.ViewUser(l.User)
	return loginResult{true, l.Token, l.User.ID, uv, uv.CompanyID, l.AMR(), l.SecondFactorPending(), l.RefreshToken}
}

// sessionRefresh is POST /session/refresh {refreshToken}: a new session
// token and a new refresh token of the same session, for the API key's
// project.
func (s *Server) sessionRefresh(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in struct {
		RefreshToken string `json:"refreshToken"`
	}
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "session", "refresh", err, m)
	}
	rf, err := s.auth.RefreshSession(r.Context(), c.Project, in.RefreshToken, m)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success      bool   `json:"success"`
		Token        string `json:"token"`
		RefreshToken string `json:"refreshToken"`
		ExpiresAt    int64  `json:"expiresAt"`
	}{true, rf.Token, rf.RefreshToken, rf.ExpiresAt.Unix()})
}

package httpapi

import "latchkey/auth"

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
}

func newLoginResult(l *auth.Login) loginResult {
	uv := auth.ViewUser(l.User)
	return loginResult{true, l.Token, l.User.ID, uv, uv.CompanyID, l.AMR(), l.SecondFactorPending()}
}

package httpapi

import "latchkey/auth"

// loginResult holds the fields every login result carries: the
// contract's success, token and userId, and user and companyId
// (decisions.md §14). Each login endpoint embeds it and adds its own.
type loginResult struct {
	Success   bool          `json:"success"`
	Token     string        `json:"token"`
	UserID    string        `json:"userId"`
	User      auth.UserView `json:"user"`
	CompanyID *string       `json:"companyId"`
}

func newLoginResult(l *auth.Login) loginResult {
	uv := auth.ViewUser(l.User)
	return loginResult{true, l.Token, l.User.ID, uv, uv.CompanyID}
}

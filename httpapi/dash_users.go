package httpapi

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The dashboard's user page and the actions on a user: enable, and,
// after a confirmation, disable, end every session, reset TOTP, delete.

// userSessionsShown is how many sessions the user page lists.
const userSessionsShown = 100

// userPath is the dashboard page of user id.
func userPath(id string) string { return "/admin/users/" + url.PathEscape(id) }

// dashUser shows a user: the admin view, factors, and the newest
// sessions, with the actions.
func (s *Server) dashUser(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), userSessionsShown)
	if err != nil {
		return err
	}
	proj, err := s.auth.Project(r.Context(), d.User.ProjectID)
	if err != nil {
		return err
	}
	page.Title = d.User.Email
	return s.show(w, page, "user.html", struct {
		dashPage
		Project auth.ProjectView
		auth.UserDetail
	}{page, s.auth.ViewProject(proj), d})
}

// userBack is where an action on user u returns: the project's user
// list when it was started there (from=project), else the user's page.
func userBack(r *http.Request, u auth.AdminUser) string {
	if formOrQuery(r, "from") == "project" {
		return projectPath(u.ProjectID) + "#users"
	}
	return userPath(u.ID)
}

// sessionCount says how many live sessions d lists, or that there are
// more than it lists.
func sessionCount(d auth.UserDetail) string {
	if d.MoreSessions {
		return fmt.Sprintf("more than %d", len(d.Sessions))
	}
	return fmt.Sprint(len(d.Sessions))
}

// userConfirmation starts the confirmation of an action on user id:
// the facts that name the user; Cancel returns where the action would.
func (s *Server) userConfirmation(r *http.Request, id string) (auth.UserDetail, confirmation, error) {
	d, err := s.auth.AdminUserDetail(r.Context(), id, userSessionsShown)
	if err != nil {
		return d, confirmation{}, err
	}
	c := confirmation{Facts: []fact{{"Email", d.User.Email}, {"User ID", d.User.ID}, {"Created", d.User.CreatedAt}, {"Live sessions", sessionCount(d)}},
		Cancel: userBack(r, d.User)}
	if proj, err := s.auth.Project(r.Context(), d.User.ProjectID); err == nil {
		c.Facts = append([]fact{{"Project", proj.Name}}, c.Facts...)
	}
	return d, c, nil
}

func (s *Server) dashEnableUser(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
	if err != nil {
		return err
	}
	if err := s.auth.SetUserDisabled(r.Context(), d.User.ID, false); err != nil {
		return err
	}
	return s.done(w, r, page, userBack(r, d.User), d.User.Email+" enabled.")
}

func (s *Server) confirmDisableUser(r *http.Request, p httprouter.Params) (confirmation, error) {
	_, c, err := s.userConfirmation(r, p.ByName("id"))
	c.Heading = "Disable this user?"
	c.Effects = []string{"Every session of the user ends now (session.revoked is sent for each).",
		"Every sign-in is refused (403 USER_DISABLED) until the user is enabled again. Nothing is deleted."}
	c.Button = "Disable user"
	return c, err
}

func (s *Server) dashDisableUser(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
	if err != nil {
		return err
	}
	if err := s.auth.SetUserDisabled(r.Context(), d.User.ID, true); err != nil {
		return err
	}
	return s.done(w, r, page, userBack(r, d.User), d.User.Email+" disabled.")
}

func (s *Server) confirmRevokeSessions(r *http.Request, p httprouter.Params) (confirmation, error) {
	_, c, err := s.userConfirmation(r, p.ByName("id"))
	c.Heading = "End every session of this user?"
	c.Effects = []string{"The user is signed out on every device and must sign in again (session.revoked is sent for each session). The account stays enabled."}
	c.Button = "End all sessions"
	return c, err
}

func (s *Server) dashRevokeSessions(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
	if err != nil {
		return err
	}
	n, err := s.auth.AdminRevokeSessions(r.Context(), d.User.ID)
	if err != nil {
		return err
	}
	return s.done(w, r, page, userBack(r, d.User), fmt.Sprintf("%s of %s ended.", plural(n, "session"), d.User.Email))
}

func (s *Server) confirmResetTOTP(r *http.Request, p httprouter.Params) (confirmation, error) {
	d, c, err := s.userConfirmation(r, p.ByName("id"))
	if err != nil {
		return c, err
	}
	if d.TOTP == nil {
		return c, auth.ErrTOTPNotEnrolled
	}
	c.Facts = append(c.Facts, fact{"TOTP failures", fmt.Sprint(d.TOTP.Failures)})
	if d.TOTP.LockedUntil != "" {
		c.Facts = append(c.Facts, fact{"TOTP locked until", d.TOTP.LockedUntil})
	}
	c.Heading = "Reset this user's TOTP lockout?"
	c.Effects = []string{"Clears the failure count and any lockout, including the one after 100 failures: codes are accepted again at once.",
		"The enrolment stays: the user keeps the same authenticator app. Do this only once you know the user is who they say."}
	c.Button = "Reset TOTP lockout"
	return c, nil
}

func (s *Server) dashResetTOTP(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
	if err != nil {
		return err
	}
	if err := s.auth.ResetTOTP(r.Context(), d.User.ID, s.meta(r, false)); err != nil {
		return err
	}
	return s.done(w, r, page, userBack(r, d.User), "TOTP lockout of "+d.User.Email+" reset.")
}

func (s *Server) confirmResetSMS(r *http.Request, p httprouter.Params) (confirmation, error) {
	d, c, err := s.userConfirmation(r, p.ByName("id"))
	if err != nil {
		return c, err
	}
	if d.SMS == nil {
		return c, auth.ErrSMSNotEnrolled
	}
	c.Facts = append(c.Facts, fact{"SMS failures", fmt.Sprint(d.SMS.Failures)})
	if d.SMS.LockedUntil != "" {
		c.Facts = append(c.Facts, fact{"SMS locked until", d.SMS.LockedUntil})
	}
	c.Heading = "Reset this user's SMS lockout?"
	c.Effects = []string{"Clears the failure count and any lockout of the enrolled phone, including the one after 100 failures: its codes are accepted again at once.",
		"The phone stays enrolled. Do this only once you know the user is who they say."}
	c.Button = "Reset SMS lockout"
	return c, nil
}

func (s *Server) dashResetSMS(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
	if err != nil {
		return err
	}
	if err := s.auth.ResetSMS(r.Context(), d.User.ID, s.meta(r, false)); err != nil {
		return err
	}
	return s.done(w, r, page, userBack(r, d.User), "SMS lockout of "+d.User.Email+" reset.")
}

func (s *Server) confirmDeleteUser(r *http.Request, p httprouter.Params) (confirmation, error) {
	_, c, err := s.userConfirmation(r, p.ByName("id"))
	c.Heading = "Delete this user?"
	c.Effects = []string{"Deletes the user with their sessions, factors, passkeys, backup codes and remembered devices; user.deleted is sent to webhooks.",
		"This cannot be undone. A later sign-in with the same address creates a new user."}
	c.Button = "Delete user"
	return c, err
}

func (s *Server) dashDeleteUser(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
	if err != nil {
		return err
	}
	if err := s.auth.AdminDeleteUser(r.Context(), d.User.ID); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(d.User.ProjectID)+"#users", d.User.Email+" deleted.")
}

// plural returns "1 session", "2 sessions".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

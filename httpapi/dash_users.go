package httpapi

import (
	"context"
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

// lockout is a factor whose failure count and lockout the operator
// resets from a user's page (TOTP, SMS): the page names the factor, shows
// its failures and lockout, and says what the reset keeps.
type lockout struct {
	name    string
	state   func(auth.UserDetail) (failures int, lockedUntil string, enrolled bool)
	missing error // the answer for a user without the factor
	effects []string
	reset   func(a *auth.Service, ctx context.Context, userID string, m auth.Meta) error
}

var (
	totpLockout = lockout{name: "TOTP",
		state: func(d auth.UserDetail) (int, string, bool) {
			if d.TOTP == nil {
				return 0, "", false
			}
			return d.TOTP.Failures, d.TOTP.LockedUntil, true
		},
		missing: auth.ErrTOTPNotEnrolled,
		effects: []string{"Clears the failure count and any lockout, including the one after 100 failures: codes are accepted again at once.",
			"The enrolment stays: the user keeps the same authenticator app. Do this only once you know the user is who they say."},
		reset: (*auth.Service).ResetTOTP}
	smsLockout = lockout{name: "SMS",
		state: func(d auth.UserDetail) (int, string, bool) {
			if d.SMS == nil {
				return 0, "", false
			}
			return d.SMS.Failures, d.SMS.LockedUntil, true
		},
		missing: auth.ErrSMSNotEnrolled,
		effects: []string{"Clears the failure count and any lockout of the enrolled phone, including the one after 100 failures: its codes are accepted again at once.",
			"The phone stays enrolled. Do this only once you know the user is who they say."},
		reset: (*auth.Service).ResetSMS}
)

// confirmReset is the confirmation page of resetting f's lockout.
func (s *Server) confirmReset(f lockout) func(*http.Request, httprouter.Params) (confirmation, error) {
	return func(r *http.Request, p httprouter.Params) (confirmation, error) {
		d, c, err := s.userConfirmation(r, p.ByName("id"))
		if err != nil {
			return c, err
		}
		failures, lockedUntil, enrolled := f.state(d)
		if !enrolled {
			return c, f.missing
		}
		c.Facts = append(c.Facts, fact{f.name + " failures", fmt.Sprint(failures)})
		if lockedUntil != "" {
			c.Facts = append(c.Facts, fact{f.name + " locked until", lockedUntil})
		}
		c.Heading = "Reset this user's " + f.name + " lockout?"
		c.Effects = f.effects
		c.Button = "Reset " + f.name + " lockout"
		return c, nil
	}
}

// dashReset resets f's lockout once confirmed.
func (s *Server) dashReset(f lockout) func(http.ResponseWriter, *http.Request, httprouter.Params, dashPage) error {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
		d, err := s.auth.AdminUserDetail(r.Context(), p.ByName("id"), 1)
		if err != nil {
			return err
		}
		if err := f.reset(s.auth, r.Context(), d.User.ID, s.meta(r, false)); err != nil {
			return err
		}
		return s.done(w, r, page, userBack(r, d.User), f.name+" lockout of "+d.User.Email+" reset.")
	}
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

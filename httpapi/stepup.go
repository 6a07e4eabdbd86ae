package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

func (s *Server) backupGenerate(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct{}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	codes, err := s.auth.GenerateBackupCodes(r.Context(), pr, s.meta(r, false))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success bool     `json:"success"`
		Codes   []string `json:"codes"`
	}{true, codes})
}

func (s *Server) backupVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in auth.BackupInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	l, err := s.auth.VerifyBackupCode(r.Context(), c.Project, in, s.meta(r, true))
	if err != nil {
		return err
	}
	return ok(w, newLoginResult(l))
}

type enrolled struct {
	Success  bool `json:"success"`
	Enrolled bool `json:"enrolled"`
}

func (s *Server) smsSend(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct {
		Phone string `json:"phone"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := s.auth.SendSMSCode(r.Context(), pr, in.Phone, s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) smsVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct {
		Code string `json:"code"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := s.auth.VerifySMSCode(r.Context(), pr, in.Code, s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, enrolled{true, true})
}

package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

func (s *Server) totpEnroll(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct{}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	e, err := s.auth.EnrollTOTP(r.Context(), pr, s.meta(r, false))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success       bool   `json:"success"`
		OtpauthURL    string `json:"otpauthUrl"`
		QRCodeDataURL string `json:"qrCodeDataUrl"`
		Secret        string `json:"secret"`
	}{true, e.OtpauthURL, e.QRCodeDataURL, e.Secret})
}

func (s *Server) totpVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	var in struct {
		Code string `json:"code"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := s.auth.VerifyTOTP(r.Context(), pr, in.Code, s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, enrolled{true, true})
}

package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// rawBody reads the body as received (at most 64 KiB): signatures are
// checked over these exact bytes, never a re-serialisation.
func rawBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, auth.ErrPayloadTooLarge
	} else if err != nil {
		return nil, auth.Invalid("Could not read the request body.")
	}
	return body, nil
}

// externalLogin is the confirm and redeem login result.
type externalLogin struct {
	loginResult
	ExternalUserID string `json:"externalUserId"`
	IsNewUser      bool   `json:"isNewUser"`
}

func newExternalLogin(l *auth.ExternalLogin) externalLogin {
	return externalLogin{newLoginResult(l.Login), l.ExternalUserID, l.IsNewUser}
}

func (s *Server) externalConfirm(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	raw, err := rawBody(w, r)
	if err != nil {
		return err
	}
	l, err := s.auth.ConfirmExternal(r.Context(), c.Project, raw, r.Header.Get("X-Service-Signature"), s.meta(r, true))
	if err != nil {
		return err
	}
	return ok(w, newExternalLogin(l))
}

func (s *Server) externalCallback(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	raw, err := rawBody(w, r)
	if err != nil {
		return err
	}
	if err := s.auth.ExternalCallback(r.Context(), p.ByName("registrationId"), raw, r.Header.Get("X-Service-Signature"), s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) externalRedeem(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in struct {
		Method    string `json:"method"`
		Reference string `json:"reference"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	l, err := s.auth.RedeemExternal(r.Context(), c.Project, in.Method, in.Reference, s.meta(r, true))
	if err != nil {
		return err
	}
	return ok(w, newExternalLogin(l))
}

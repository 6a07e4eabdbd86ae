package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// TODO(totp): placeholder until the TOTP use case lands.
func (s *Server) totpEnroll(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	return auth.ErrNotFound
}

func (s *Server) totpVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, pr *auth.Principal) error {
	return auth.ErrNotFound
}

package httpapi

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"time"

	"latchkey/auth"
)

// Dynamic client registration (RFC 7591) at <issuer>/register: a JSON
// body of client metadata in, 201 and the registered client out, or
// RFC 7591's {error, error_description} (docs/oidc.md, "Dynamic client
// registration"). The rules are auth's (RegisterClient).

// oidcRegisterPath is the registration endpoint, under an issuer.
const oidcRegisterPath = "/register"

// maxRegistrationBody bounds a registration's body (bytes).
const maxRegistrationBody = 16 << 10

// registrationStatus is the HTTP status of each refusal of a
// registration.
var registrationStatus = map[string]int{
	auth.RegInvalidRedirectURI:    http.StatusBadRequest,
	auth.RegInvalidClientMetadata: http.StatusBadRequest,
	auth.RegClosed:                http.StatusForbidden,
	auth.RegTooMany:               http.StatusTooManyRequests,
}

// oidcRegister answers a registration for project p's provider.
func (s *Server) oidcRegister(w http.ResponseWriter, r *http.Request, p *projectOP) {
	oidcCORSPolicy().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusNoContent) // a preflight the CORS handler did not take
			return
		}
		noStore(w)
		var in auth.Registration
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeRegistrationError(w, &auth.RegistrationError{Code: auth.RegInvalidClientMetadata,
				Description: "The body must be JSON (Content-Type: application/json)."})
			return
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegistrationBody)).Decode(&in); err != nil {
			writeRegistrationError(w, &auth.RegistrationError{Code: auth.RegInvalidClientMetadata,
				Description: "The body must be a JSON object of client metadata of at most 16 KiB (RFC 7591)."})
			return
		}
		c, err := s.auth.RegisterClient(r.Context(), p.id, in)
		var re *auth.RegistrationError
		switch {
		case errors.As(err, &re):
			writeRegistrationError(w, re)
		case err != nil:
			e := auth.AsError(err)
			if statusOf(e) >= 500 {
				s.log.Error("client registration failed", "project", p.id, "err", err)
				writeJSON(w, statusOf(e), map[string]string{"error": "server_error", "error_description": e.Message})
				return
			}
			s.writeError(w, err) // the project is gone: the envelope, as the provider's other paths
		default:
			writeJSON(w, http.StatusCreated, c)
		}
	})).ServeHTTP(w, r)
}

// writeRegistrationError writes a refused registration (RFC 7591,
// section 3.2.2), with Retry-After when it says when to retry.
func writeRegistrationError(w http.ResponseWriter, e *auth.RegistrationError) {
	status, ok := registrationStatus[e.Code]
	if !ok {
		status = http.StatusBadRequest
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10))
	}
	writeJSON(w, status, map[string]string{"error": e.Code, "error_description": e.Description})
}

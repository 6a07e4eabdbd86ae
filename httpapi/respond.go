package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// handler is the shape of every route: it returns an error instead of
// writing one.
type handler func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// handle adapts h to httprouter, writing any returned error as the envelope.
func (s *Server) handle(h handler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if err := h(w, r, p); err != nil {
			s.writeError(w, err)
		}
	}
}

type envelope struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Code    string `json:"code,omitempty"`
}

// writeError writes err as {success:false, error, code} with its status
// (statusOf, or the route's own: withStatus), and a Retry-After header
// (whole seconds, rounded up) when the error carries a wait. Anything
// that is not an *auth.Error is logged and answered as 500
// INTERNAL_ERROR without internals.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	e := auth.AsError(err)
	status := statusOf(e)
	var rs *routeStatus
	if errors.As(err, &rs) {
		status = rs.status
	}
	// NOT_READY is answered to every readiness probe while it lasts, and
	// a failed store write (SERVICE_UNAVAILABLE) to every call that
	// writes: their causes are logged by their owners (the store: once a
	// minute with the count), not once per request here.
	quiet := errors.Is(e, auth.ErrNotReady) || errors.Is(e, auth.ErrUnavailable)
	if (status >= 500 && !quiet) || e.Code == auth.ErrInternal.Code {
		s.log.Error("request failed", "code", e.Code, "err", err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10))
	}
	writeJSON(w, status, envelope{Error: e.Message, Code: e.Code})
}

// statusByCode is the HTTP status of each wire code (docs/api.md,
// "Errors", and each endpoint's table). auth declares the codes and knows no
// statuses; this table and statusOf are the only place that maps them.
var statusByCode = map[string]int{
	"VALIDATION_ERROR":     http.StatusBadRequest,
	"INVALID_REDIRECT_URL": http.StatusBadRequest,
	"INVALID_CREDENTIAL":   http.StatusBadRequest, // but see statusOf
	"CHALLENGE_EXPIRED":    http.StatusBadRequest,
	"INVALID_PAYLOAD":      http.StatusBadRequest,
	"WRONG_PATTERN":        http.StatusBadRequest,
	"INVALID_STATE":        http.StatusBadRequest,
	// Forward-auth: a request that is not from a trusted proxy, or
	// that does not say what it asks about.
	"UNTRUSTED_PROXY":           http.StatusBadRequest,
	"FORWARDED_HEADERS_MISSING": http.StatusBadRequest,
	"SIGN_IN_REQUIRED":          http.StatusUnauthorized, // but 302 for Caddy and Traefik (forwardAuth)
	"ACCESS_DENIED":             http.StatusForbidden,

	"MISSING_API_KEY":     http.StatusUnauthorized,
	"INVALID_FORMAT":      http.StatusUnauthorized,
	"API_KEY_NOT_FOUND":   http.StatusUnauthorized, // but see statusOf
	"HASH_MISMATCH":       http.StatusUnauthorized,
	"API_KEY_REVOKED":     http.StatusUnauthorized,
	"API_KEY_EXPIRED":     http.StatusUnauthorized,
	"INVALID_API_KEY":     http.StatusUnauthorized,
	"INVALID_SESSION":     http.StatusUnauthorized,
	"UNAUTHORIZED":        http.StatusUnauthorized,
	"INVALID_CODE":        http.StatusUnauthorized,
	"INVALID_TOKEN":       http.StatusUnauthorized,
	"VERIFICATION_FAILED": http.StatusUnauthorized,
	"INVALID_SIGNATURE":   http.StatusUnauthorized,
	"STALE_TIMESTAMP":     http.StatusUnauthorized,
	"REPLAYED":            http.StatusUnauthorized,

	"USER_DISABLED":         http.StatusForbidden,
	"RISK_BLOCKED":          http.StatusForbidden,
	"STEP_UP_REQUIRED":      http.StatusForbidden,
	"INACTIVE_REGISTRATION": http.StatusForbidden,
	"FORBIDDEN":             http.StatusForbidden,
	"ORIGIN_NOT_ALLOWED":    http.StatusForbidden,
	"LIVE_KEY_REFUSED":      http.StatusForbidden,
	"EMAIL_NOT_VERIFIED":    http.StatusForbidden,

	"NOT_FOUND":                 http.StatusNotFound,
	"USER_NOT_FOUND":            http.StatusNotFound,
	"TOTP_NOT_ENROLLED":         http.StatusNotFound,
	"SMS_NOT_ENROLLED":          http.StatusNotFound,
	"PASSKEY_NOT_FOUND":         http.StatusNotFound,
	"PROJECT_NOT_FOUND":         http.StatusNotFound,
	"EXTERNAL_METHOD_NOT_FOUND": http.StatusNotFound,
	"SESSION_NOT_FOUND":         http.StatusNotFound,
	"TEMPLATE_NOT_FOUND":        http.StatusNotFound,
	"PROVIDER_NOT_FOUND":        http.StatusNotFound,
	"CLIENT_NOT_FOUND":          http.StatusNotFound,
	"CONSENT_NOT_FOUND":         http.StatusNotFound,
	"PAGE_TEXTS_NOT_FOUND":      http.StatusNotFound,

	"METHOD_NOT_ALLOWED": http.StatusMethodNotAllowed,

	"ALREADY_ENROLLED":         http.StatusConflict,
	"EMAIL_IN_USE":             http.StatusConflict,
	"EXTERNAL_ID_CONFLICT":     http.StatusConflict,
	"USER_EXISTS":              http.StatusConflict,
	"EXTERNAL_METHOD_EXISTS":   http.StatusConflict,
	"PROVIDER_EXISTS":          http.StatusConflict,
	"SIGN_IN_WITH_EMAIL_FIRST": http.StatusConflict,

	"PAYLOAD_TOO_LARGE": http.StatusRequestEntityTooLarge,

	"RATE_LIMIT_EXCEEDED": http.StatusTooManyRequests, // but see byExternalKey
	"TOO_MANY_REQUESTS":   http.StatusTooManyRequests,
	"TOO_MANY_ATTEMPTS":   http.StatusTooManyRequests,

	"INTERNAL_ERROR":       http.StatusInternalServerError, // but see statusOf
	"NOT_SUPPORTED":        http.StatusNotImplemented,
	"SEND_FAILED":          http.StatusBadGateway,
	"PROVIDER_UNAVAILABLE": http.StatusBadGateway,
	"OAUTH_DENIED":         http.StatusUnauthorized,
	"INVALID_ID_TOKEN":     http.StatusUnauthorized,
	"NOT_READY":            http.StatusServiceUnavailable,
	// A store write failed (disk full): retry later.
	"SERVICE_UNAVAILABLE": http.StatusServiceUnavailable,
}

// statusByFailure is the status of the failures answered otherwise
// than the rest of their wire code, by the declared auth error
// they derive from (errors.Is).
var statusByFailure = []struct {
	err    *auth.Error
	status int
}{
	// A failure inside the service while validating a key is a refused
	// key, not a server error (docs/api.md, "API keys").
	{auth.ErrKeyInternal, http.StatusUnauthorized},
	// Passkey sign-in's catch-all: a failure inside the service is a
	// refused sign-in (docs/api.md, "Errors").
	{auth.ErrPasskeyLoginInternal, http.StatusUnauthorized},
	// An unknown credential on login verify is deliberately generic
	// (user_not_found: 401 on passkey login verify); a malformed or
	// refused one stays 400.
	{auth.ErrUnknownCredential, http.StatusUnauthorized},
	// An admin call naming an unknown key prefix: the key is a resource
	// there, not the caller's credential.
	{auth.ErrKeyNotFound, http.StatusNotFound},
	// The webhook 404 has no code (docs/api.md, "Errors").
	{auth.ErrWebhookNotFound, http.StatusNotFound},
}

// statusOf is the HTTP status an auth error is answered with: its
// failure's when statusByFailure names it, else its wire code's, else
// 500. A store out of reach (SERVICE_UNAVAILABLE) is 503 whatever it
// interrupted: a key check's or a passkey sign-in's failure is 401 when
// the service itself fails, but a database that is restarting says
// nothing about the caller's credential.
func statusOf(e *auth.Error) int {
	if e.Is(auth.ErrUnavailable) {
		return http.StatusServiceUnavailable
	}
	for _, f := range statusByFailure {
		if errors.Is(e, f.err) {
			return f.status
		}
	}
	if st, ok := statusByCode[e.Code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// routeStatus is an error a route answers with its own status: where the
// contract gives one route another status for a code than statusOf's
// (byExternalKey). The route knows its context; auth does not.
type routeStatus struct {
	status int
	err    error
}

func (e *routeStatus) Error() string { return e.err.Error() }
func (e *routeStatus) Unwrap() error { return e.err }

// withStatus returns err answered with status instead of statusOf's.
func withStatus(status int, err error) error {
	return &routeStatus{status: status, err: err}
}

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"success":false,"error":"Internal error.","code":"INTERNAL_ERROR"}`)
	}
	jsonHeaders(w.Header())
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// jsonHeaders sets a JSON answer's headers: its type, and no-store
// unless the handler chose its caching.
func jsonHeaders(h http.Header) {
	h["Content-Type"] = contentTypeJSON
	if h.Get("Cache-Control") == "" {
		h["Cache-Control"] = cacheNoStore
	}
}

// ok writes a 200 response: v's fields with success:true added by the
// caller's struct, or a plain {success:true} when v is nil.
func ok(w http.ResponseWriter, v any) error {
	if v == nil {
		// Written as is: forward-auth answers every request to a
		// protected app with it.
		jsonHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		w.Write(okBody)
		return nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// okBody is ok's answer without fields; contentTypeJSON and
// cacheNoStore are jsonHeaders' values (shared: never changed).
var (
	okBody          = []byte(`{"success":true}` + "\n")
	contentTypeJSON = []string{"application/json"}
	cacheNoStore    = []string{"no-store"}
)

// decode reads a JSON object body (at most 64 KiB) into v, ignoring
// unknown fields (the public API's rule). An empty body is an empty
// object. Errors: 413 PAYLOAD_TOO_LARGE, 400 VALIDATION_ERROR.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeBytes(body, v)
}

// decodeStrict is decode for admin API bodies: a field v does not have
// is 400 VALIDATION_ERROR naming it and the fields the call takes, so a
// misspelled setting ("alowedOrigins") fails instead of being dropped.
// v is a pointer to a struct; &struct{}{} for a call that takes none.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(body, v, true)
}

// readBody reads the request body, at most MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(unwrapWriter(w), r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, auth.ErrPayloadTooLarge
	} else if err != nil {
		return nil, auth.Invalid("Could not read the request body.")
	}
	return body, nil
}

// decodeBytes is decode for a body already read.
func decodeBytes(body []byte, v any) error { return decodeJSON(body, v, false) }

// decodeJSON decodes one JSON object into v; strict refuses unknown fields.
func decodeJSON(body []byte, v any, strict bool) error {
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		trimmed = "{}"
	}
	if trimmed[0] != '{' {
		return auth.Invalid("Request body must be a JSON object.")
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return auth.Invalid("%s has the wrong type: expected %s.", typeErr.Field, typeName(typeErr.Type))
		}
		if name, ok := unknownField(err); ok {
			return unknownFieldError(name, v)
		}
		return auth.Invalid("Request body is not valid JSON.")
	}
	if dec.More() {
		return auth.Invalid("Request body must hold a single JSON object.")
	}
	return nil
}

// unknownField returns the field named by encoding/json's error for a
// field the target does not have (DisallowUnknownFields).
func unknownField(err error) (string, bool) {
	rest, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	name, uerr := strconv.Unquote(rest)
	if uerr != nil {
		return rest, true
	}
	return name, true
}

// unknownFieldError is 400 VALIDATION_ERROR naming the unknown field
// (clipped to 64 bytes) and the fields v's struct takes.
func unknownFieldError(name string, v any) error {
	if len(name) > 64 {
		name = strings.ToValidUTF8(name[:64], "") + "…"
	}
	fields := jsonFields(reflect.TypeOf(v))
	if len(fields) == 0 {
		return auth.Invalid("Unknown field %q: this call takes no fields.", name)
	}
	return auth.Invalid("Unknown field %q: this call takes %s.", name, strings.Join(fields, ", "))
}

// jsonFields lists the JSON names of a struct type's fields, in order.
func jsonFields(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// typeName words a Go type for a client: "a string", "an integer".
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

// unwrapWriter returns the net/http ResponseWriter under the wrappers of
// this package (the metrics' status recorder), so that MaxBytesReader can
// tell the server to close the connection after an over-long body.
func unwrapWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

package auth

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error is a failure the caller may see: the contract's wire code, its HTTP
// status, the failure category recorded on authentication events, and a
// message safe to show. Err, the cause, is logged and never sent.
// RetryAfter, when positive, tells the caller how long to wait (sent as
// the Retry-After header). The declared values below are shared: derive
// copies with With, Because or WithRetry, never change them.
type Error struct {
	Code       string
	Status     int
	Category   string
	Message    string
	Err        error
	RetryAfter time.Duration
}

// Error renders the code, message and cause for logs (never the wire).
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// With returns a copy of e with another message.
func (e *Error) With(msg string) *Error {
	c := *e
	c.Message = msg
	return &c
}

// Because returns a copy of e carrying cause, for the log.
func (e *Error) Because(cause error) *Error {
	c := *e
	c.Err = cause
	return &c
}

// WithRetry returns a copy of e that asks the caller to retry after d.
func (e *Error) WithRetry(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// Failure categories (the contract's "Failure categories" table).
const (
	CatInvalidCode    = "invalid_code"
	CatExpired        = "expired"
	CatAlreadyUsed    = "already_used"
	CatRateLimited    = "rate_limited"
	CatUserNotFound   = "user_not_found"
	CatUserDisabled   = "user_disabled"
	CatUserExists     = "user_exists"
	CatValidation     = "validation_error"
	CatRiskBlocked    = "risk_blocked"
	CatExternalMethod = "external_method_error"
	CatInternal       = "internal_error"
)

func newErr(status int, code, category, msg string) *Error {
	return &Error{Code: code, Status: status, Category: category, Message: msg}
}

// Request and routing errors (decisions.md §13).
var (
	ErrValidation       = newErr(http.StatusBadRequest, "VALIDATION_ERROR", CatValidation, "Invalid request.")
	ErrNotFound         = newErr(http.StatusNotFound, "NOT_FOUND", "", "Not found")
	ErrMethodNotAllowed = newErr(http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "", "Method not allowed.")
	ErrPayloadTooLarge  = newErr(http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", CatValidation, "Request body is larger than 64 KiB.")
	ErrInternal         = newErr(http.StatusInternalServerError, "INTERNAL_ERROR", CatInternal, "Internal error.")
	ErrUnauthorized     = newErr(http.StatusUnauthorized, "UNAUTHORIZED", "", "Missing or invalid admin token.")
	// ErrNotReady is GET /ready's 503 while the store, the scheduler or
	// a required provider is not usable; its message names which.
	ErrNotReady = newErr(http.StatusServiceUnavailable, "NOT_READY", "", "Not ready.")
	// ErrOriginNotAllowed answers a CORS preflight from an origin that
	// no project allows.
	ErrOriginNotAllowed = newErr(http.StatusForbidden, "ORIGIN_NOT_ALLOWED", "", "This origin is not an allowed origin of any project: add it to the project's allowedOrigins.")
)

// API key errors, in the decided validation order (decisions.md §4).
var (
	ErrMissingAPIKey     = newErr(http.StatusUnauthorized, "MISSING_API_KEY", "", "Missing API key: send the header Authorization: Bearer followed by the key.")
	ErrInvalidFormat     = newErr(http.StatusUnauthorized, "INVALID_FORMAT", "", "API key has an invalid format.")
	ErrAPIKeyNotFound    = newErr(http.StatusUnauthorized, "API_KEY_NOT_FOUND", "", "API key not found.")
	ErrHashMismatch      = newErr(http.StatusUnauthorized, "HASH_MISMATCH", "", "API key is invalid.")
	ErrAPIKeyRevoked     = newErr(http.StatusUnauthorized, "API_KEY_REVOKED", "", "API key has been revoked.")
	ErrAPIKeyExpired     = newErr(http.StatusUnauthorized, "API_KEY_EXPIRED", "", "API key has expired.")
	ErrInvalidAPIKey     = newErr(http.StatusUnauthorized, "INVALID_API_KEY", "", "API key is not attached to a project.")
	ErrRateLimitExceeded = newErr(http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many requests for this API key; retry later.")
	ErrKeyInternal       = newErr(http.StatusUnauthorized, "INTERNAL_ERROR", CatInternal, "Could not validate the API key; retry.")
)

// Session errors.
var (
	ErrInvalidSession = newErr(http.StatusUnauthorized, "INVALID_SESSION", "", "Invalid or expired session.")
)

// Login and account errors.
var (
	ErrInvalidCode        = newErr(http.StatusUnauthorized, "INVALID_CODE", CatInvalidCode, "Invalid code.")
	ErrCodeExpired        = newErr(http.StatusUnauthorized, "INVALID_CODE", CatExpired, "This code has expired. Request a new code.")
	ErrCodeLocked         = newErr(http.StatusUnauthorized, "INVALID_CODE", CatRateLimited, "Too many attempts. Request a new code.")
	ErrTooManyRequests    = newErr(http.StatusTooManyRequests, "TOO_MANY_REQUESTS", CatRateLimited, "Too many codes sent to this address; wait before asking again.")
	ErrInvalidToken       = newErr(http.StatusUnauthorized, "INVALID_TOKEN", CatInvalidCode, "Invalid or expired link.")
	ErrLinkUsed           = newErr(http.StatusUnauthorized, "INVALID_TOKEN", CatAlreadyUsed, "This link was already used. Request a new one.")
	ErrLinkExpired        = newErr(http.StatusUnauthorized, "INVALID_TOKEN", CatExpired, "This link has expired. Request a new one.")
	ErrInvalidRedirect    = newErr(http.StatusBadRequest, "INVALID_REDIRECT_URL", CatValidation, "Redirect URL is not an allowed origin of this project.")
	ErrUserDisabled       = newErr(http.StatusForbidden, "USER_DISABLED", CatUserDisabled, "This account is disabled.")
	ErrEmailInUse         = newErr(http.StatusConflict, "EMAIL_IN_USE", CatValidation, "Another user of this project has that email address.")
	ErrExternalIDConflict = newErr(http.StatusConflict, "EXTERNAL_ID_CONFLICT", CatUserExists, "That externalUserId belongs to another user.")
	ErrExternalIDMismatch = newErr(http.StatusConflict, "EXTERNAL_ID_CONFLICT", CatUserExists, "This user already has a different externalUserId.")
	ErrRiskBlocked        = newErr(http.StatusForbidden, "RISK_BLOCKED", CatRiskBlocked, "Request blocked.")
)

// Step-up and recovery errors.
var (
	ErrVerificationFailed = newErr(http.StatusUnauthorized, "VERIFICATION_FAILED", CatInvalidCode, "Verification failed.")
	ErrTOTPNotEnrolled    = newErr(http.StatusNotFound, "TOTP_NOT_ENROLLED", CatUserNotFound, "TOTP is not enrolled for this user.")
	ErrAlreadyEnrolled    = newErr(http.StatusConflict, "ALREADY_ENROLLED", CatValidation, "TOTP is already enrolled.")
	ErrTooManyAttempts    = newErr(http.StatusTooManyRequests, "TOO_MANY_ATTEMPTS", CatRateLimited, "Too many failed attempts; try again later.")
	ErrSendFailed         = newErr(http.StatusBadGateway, "SEND_FAILED", CatInternal, "The SMS could not be sent.")
	// ErrStepUpRequired refuses an SMS send to a phone other than the
	// enrolled one on a session without a recent step-up (decisions.md
	// §15). It is recorded as risk_blocked: a risky change blocked
	// whatever the credential.
	ErrStepUpRequired = newErr(http.StatusForbidden, "STEP_UP_REQUIRED", CatRiskBlocked, "Verify with your current phone or another factor first.")
)

// Passkey errors (decisions.md §9).
var (
	ErrInvalidCredential = newErr(http.StatusBadRequest, "INVALID_CREDENTIAL", CatInvalidCode, "The passkey response is not valid.")
	ErrChallengeExpired  = newErr(http.StatusBadRequest, "CHALLENGE_EXPIRED", CatExpired, "The challenge is unknown, used or expired; start again.")
	ErrUnknownCredential = newErr(http.StatusUnauthorized, "INVALID_CREDENTIAL", CatUserNotFound, "Passkey sign-in failed.")
	ErrUserExists        = newErr(http.StatusConflict, "USER_EXISTS", CatUserExists, "An account with this email already exists; sign in and add a passkey.")
	ErrPasskeyNotFound   = newErr(http.StatusNotFound, "PASSKEY_NOT_FOUND", "", "Passkey not found.")
	ErrNoPasskey         = newErr(http.StatusNotFound, "USER_NOT_FOUND", CatUserNotFound, "No passkey is registered for this email.")
	// ErrPasskeyLoginInternal is the contract's passkey-login catch-all:
	// a failure inside the service answered 401, category internal_error.
	ErrPasskeyLoginInternal = newErr(http.StatusUnauthorized, "INTERNAL_ERROR", CatInternal, "Passkey sign-in failed; retry.")
	// ErrDemoLiveKey: the passkey demo page's routes take test-mode keys only.
	ErrDemoLiveKey = newErr(http.StatusForbidden, "LIVE_KEY_REFUSED", "", "The passkey demo accepts test-mode keys (sk_test_) only.")
)

// External-method (BYOAM) errors.
var (
	ErrInvalidSignature     = newErr(http.StatusUnauthorized, "INVALID_SIGNATURE", CatExternalMethod, "INVALID_SIGNATURE")
	ErrStaleTimestamp       = newErr(http.StatusUnauthorized, "STALE_TIMESTAMP", CatExternalMethod, "verifiedAt is more than 60 seconds from now.")
	ErrWrongPattern         = newErr(http.StatusBadRequest, "WRONG_PATTERN", CatExternalMethod, "This method is registered for another pattern.")
	ErrInvalidPayload       = newErr(http.StatusBadRequest, "INVALID_PAYLOAD", CatExternalMethod, "Invalid payload.")
	ErrInactiveRegistration = newErr(http.StatusForbidden, "INACTIVE_REGISTRATION", CatExternalMethod, "This method's registration is inactive.")
	ErrReplayed             = newErr(http.StatusUnauthorized, "REPLAYED", CatExternalMethod, "This confirmation was already used.")
)

// ErrWebhookNotFound is the contract's 404 without a code.
var ErrWebhookNotFound = newErr(http.StatusNotFound, "", "", "Webhook not found")

// Admin errors.
var (
	ErrProjectNotFound = newErr(http.StatusNotFound, "PROJECT_NOT_FOUND", "", "Project not found.")
	ErrKeyNotFound     = newErr(http.StatusNotFound, "API_KEY_NOT_FOUND", "", "API key not found.")
	ErrUserNotFound    = newErr(http.StatusNotFound, "USER_NOT_FOUND", CatUserNotFound, "User not found.")
	ErrMethodNotFound  = newErr(http.StatusNotFound, "EXTERNAL_METHOD_NOT_FOUND", "", "External method not found.")
	ErrMethodExists    = newErr(http.StatusConflict, "EXTERNAL_METHOD_EXISTS", "", "The project already has a method with that name.")
)

// Session management and abuse limits (decisions.md §15, §20).
var (
	ErrSessionNotFound  = newErr(http.StatusNotFound, "SESSION_NOT_FOUND", "", "Session not found.")
	ErrSessionRateLimit = newErr(http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many requests for this session; retry later.")
	ErrAdminThrottled   = newErr(http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many failed admin token attempts from this address; retry later.")
	// ErrForbidden refuses a cross-site POST to the magic-link confirm
	// page (login CSRF).
	ErrForbidden = newErr(http.StatusForbidden, "FORBIDDEN", "", "Cross-site request refused: open the sign-in link itself and press its button.")
)

// Invalid returns a 400 VALIDATION_ERROR with msg.
func Invalid(format string, args ...any) *Error {
	return ErrValidation.With(fmt.Sprintf(format, args...))
}

// AsError returns err as an *Error; anything else becomes INTERNAL_ERROR
// carrying err as its cause.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return ErrInternal.Because(err)
}

package auth

import (
	"errors"
	"fmt"
	"time"

	"latchkey/store"
)

// Error is a failure the caller may see: its stable wire code, the
// failure category recorded on authentication events, and a message safe
// to show. Err, the cause, is logged and never sent. RetryAfter, when
// positive, tells the caller how long to wait (sent as the Retry-After
// header). The declared values below are shared: derive copies with
// With, Because or WithRetry, never change them. A copy is still the
// failure it was derived from (errors.Is(err, ErrKeyInternal) holds for
// ErrKeyInternal.Because(cause)): that is how the HTTP layer tells apart
// failures that share a wire code but not a status (httpapi's statusOf);
// auth knows no statuses.
type Error struct {
	Code       string
	Category   string
	Message    string
	Err        error
	RetryAfter time.Duration

	decl *Error // the declared value this one derives from
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

// Is reports whether target is the declared error e derives from (itself,
// or the value With, Because, WithRetry or a category change copied), so
// errors.Is matches a failure whatever its message, cause or wait.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.decl == t && e.decl == t
}

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

// Failure categories (docs/api.md, "Failure categories").
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

// newErr declares a failure: its wire code, category and default message.
func newErr(code, category, msg string) *Error {
	e := &Error{Code: code, Category: category, Message: msg}
	e.decl = e
	return e
}

// Request and routing errors (docs/api.md, "Request limits").
var (
	ErrValidation       = newErr("VALIDATION_ERROR", CatValidation, "Invalid request.")
	ErrNotFound         = newErr("NOT_FOUND", "", "Not found")
	ErrMethodNotAllowed = newErr("METHOD_NOT_ALLOWED", "", "Method not allowed.")
	ErrPayloadTooLarge  = newErr("PAYLOAD_TOO_LARGE", CatValidation, "Request body is larger than 64 KiB.")
	ErrInternal         = newErr("INTERNAL_ERROR", CatInternal, "Internal error.")
	ErrUnauthorized     = newErr("UNAUTHORIZED", "", "Missing or invalid admin token.")
	// ErrNotReady answers GET /ready while the store, the scheduler or
	// a required provider is not usable; its message names which.
	ErrNotReady = newErr("NOT_READY", "", "Not ready.")
	// ErrOriginNotAllowed answers a CORS preflight from an origin that
	// no project allows.
	ErrOriginNotAllowed = newErr("ORIGIN_NOT_ALLOWED", "", "This origin is not an allowed origin of any project: add it to the project's allowedOrigins.")
)

// API key errors, in the order the key check tries them (docs/api.md,
// "API keys").
var (
	ErrMissingAPIKey     = newErr("MISSING_API_KEY", "", "Missing API key: send the header Authorization: Bearer followed by the key.")
	ErrInvalidFormat     = newErr("INVALID_FORMAT", "", "API key has an invalid format.")
	ErrAPIKeyNotFound    = newErr("API_KEY_NOT_FOUND", "", "API key not found.")
	ErrHashMismatch      = newErr("HASH_MISMATCH", "", "API key is invalid.")
	ErrAPIKeyRevoked     = newErr("API_KEY_REVOKED", "", "API key has been revoked.")
	ErrAPIKeyExpired     = newErr("API_KEY_EXPIRED", "", "API key has expired.")
	ErrInvalidAPIKey     = newErr("INVALID_API_KEY", "", "API key is not attached to a project.")
	ErrRateLimitExceeded = newErr("RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many requests for this API key; retry later.")
	// ErrKeyInternal is a failure inside the service while validating a
	// key: unlike ErrInternal, it is answered as a refused key (401),
	// never as a pass.
	ErrKeyInternal = newErr("INTERNAL_ERROR", CatInternal, "Could not validate the API key; retry.")
)

// Session errors.
var (
	ErrInvalidSession = newErr("INVALID_SESSION", "", "Invalid or expired session.")
)

// Login and account errors.
var (
	ErrInvalidCode        = newErr("INVALID_CODE", CatInvalidCode, "Invalid code.")
	ErrCodeExpired        = newErr("INVALID_CODE", CatExpired, "This code has expired. Request a new code.")
	ErrCodeLocked         = newErr("INVALID_CODE", CatRateLimited, "Too many attempts. Request a new code.")
	ErrTooManyRequests    = newErr("TOO_MANY_REQUESTS", CatRateLimited, "Too many codes sent to this address; wait before asking again.")
	ErrInvalidToken       = newErr("INVALID_TOKEN", CatInvalidCode, "Invalid or expired link.")
	ErrCodeNotBound       = newErr("INVALID_CODE", CatInvalidCode, "codeVerifier does not match the sign-in's codeChallenge.") // a real code: no guess
	ErrLinkUsed           = newErr("INVALID_TOKEN", CatAlreadyUsed, "This link was already used. Request a new one.")
	ErrLinkExpired        = newErr("INVALID_TOKEN", CatExpired, "This link has expired. Request a new one.")
	ErrInvalidRedirect    = newErr("INVALID_REDIRECT_URL", CatValidation, "Redirect URL is not an allowed origin of this project.")
	ErrUserDisabled       = newErr("USER_DISABLED", CatUserDisabled, "This account is disabled.")
	ErrEmailInUse         = newErr("EMAIL_IN_USE", CatValidation, "Another user of this project has that email address.")
	ErrExternalIDConflict = newErr("EXTERNAL_ID_CONFLICT", CatUserExists, "That externalUserId belongs to another user.")
	ErrExternalIDMismatch = newErr("EXTERNAL_ID_CONFLICT", CatUserExists, "This user already has a different externalUserId.")
	ErrRiskBlocked        = newErr("RISK_BLOCKED", CatRiskBlocked, "Request blocked.")
)

// Step-up and recovery errors.
var (
	ErrVerificationFailed = newErr("VERIFICATION_FAILED", CatInvalidCode, "Verification failed.")
	ErrTOTPNotEnrolled    = newErr("TOTP_NOT_ENROLLED", CatUserNotFound, "TOTP is not enrolled for this user.")
	ErrSMSNotEnrolled     = newErr("SMS_NOT_ENROLLED", CatUserNotFound, "SMS is not enrolled for this user.")
	ErrAlreadyEnrolled    = newErr("ALREADY_ENROLLED", CatValidation, "TOTP is already enrolled.")
	ErrTooManyAttempts    = newErr("TOO_MANY_ATTEMPTS", CatRateLimited, "Too many failed attempts; try again later.")
	ErrSendFailed         = newErr("SEND_FAILED", CatInternal, "The SMS could not be sent.")
	// ErrStepUpRequired refuses a change that needs recent
	// authentication (requireRecentAuth) on a session without it; its
	// own words are those of an SMS send to a phone other than the
	// enrolled one. It is recorded as risk_blocked: a risky change
	// blocked whatever the credential.
	ErrStepUpRequired = newErr("STEP_UP_REQUIRED", CatRiskBlocked, "Verify with your current phone or another factor first.")
)

// Passkey errors (docs/api.md, "Passkeys").
var (
	ErrInvalidCredential = newErr("INVALID_CREDENTIAL", CatInvalidCode, "The passkey response is not valid.")
	ErrChallengeExpired  = newErr("CHALLENGE_EXPIRED", CatExpired, "The challenge is unknown, used or expired; start again.")
	ErrUnknownCredential = newErr("INVALID_CREDENTIAL", CatUserNotFound, "Passkey sign-in failed.")
	ErrUserExists        = newErr("USER_EXISTS", CatUserExists, "An account with this email already exists; sign in and add a passkey.")
	ErrPasskeyNotFound   = newErr("PASSKEY_NOT_FOUND", "", "Passkey not found.")
	ErrNoPasskey         = newErr("USER_NOT_FOUND", CatUserNotFound, "No passkey is registered for this email.")
	// ErrPasskeyLoginInternal is passkey sign-in's catch-all:
	// a failure inside the service, category internal_error, answered
	// as a refused sign-in rather than as ErrInternal.
	ErrPasskeyLoginInternal = newErr("INTERNAL_ERROR", CatInternal, "Passkey sign-in failed; retry.")
	// ErrDemoLiveKey: the passkey demo page's routes take test-mode keys only.
	ErrDemoLiveKey = newErr("LIVE_KEY_REFUSED", "", "The passkey demo accepts test-mode keys (sk_test_) only.")
)

// External-method (BYOAM) errors.
var (
	ErrInvalidSignature     = newErr("INVALID_SIGNATURE", CatExternalMethod, "INVALID_SIGNATURE")
	ErrStaleTimestamp       = newErr("STALE_TIMESTAMP", CatExternalMethod, "verifiedAt is more than 60 seconds from now.")
	ErrWrongPattern         = newErr("WRONG_PATTERN", CatExternalMethod, "This method is registered for another pattern.")
	ErrInvalidPayload       = newErr("INVALID_PAYLOAD", CatExternalMethod, "Invalid payload.")
	ErrInactiveRegistration = newErr("INACTIVE_REGISTRATION", CatExternalMethod, "This method's registration is inactive.")
	ErrReplayed             = newErr("REPLAYED", CatExternalMethod, "This confirmation was already used.")
)

// OAuth 2.0 / OpenID Connect sign-in (docs/oauth.md).
var (
	ErrProviderNotFound = newErr("PROVIDER_NOT_FOUND", "", "OAuth provider not found.")
	ErrProviderExists   = newErr("PROVIDER_EXISTS", "", "The project already has a provider with that name.")
	// ErrInvalidState: the callback's state is unknown or already used.
	ErrInvalidState = newErr("INVALID_STATE", CatInvalidCode, "Unknown or already used sign-in; start again.")
	ErrStateExpired = newErr("INVALID_STATE", CatExpired, "This sign-in has expired; start again.")
	// ErrOAuthDenied: the provider answered an error, or refused the code.
	ErrOAuthDenied = newErr("OAUTH_DENIED", CatInvalidCode, "The provider did not grant the sign-in.")
	// ErrInvalidIDToken: the ID token failed a check (signature by a key
	// of the issuer's JWKS, issuer, audience, expiry, nonce).
	ErrInvalidIDToken      = newErr("INVALID_ID_TOKEN", CatInvalidCode, "The provider's ID token is not valid.")
	ErrProviderUnavailable = newErr("PROVIDER_UNAVAILABLE", CatInternal, "The provider could not be reached; retry later.")
	// ErrEmailNotVerified: the provider does not say the address is
	// verified; no account is created or linked.
	ErrEmailNotVerified = newErr("EMAIL_NOT_VERIFIED", CatValidation, "The provider does not vouch for this email address.")
	// ErrSignInWithEmailFirst: the address belongs to an account with a
	// second factor (TOTP, SMS or a passkey), which a provider alone
	// never signs in: the app signs the user in by email code instead.
	ErrSignInWithEmailFirst = newErr("SIGN_IN_WITH_EMAIL_FIRST", CatRiskBlocked, "This account has a second factor: sign in with a code sent by email.")
	// ErrNotLinked: the address belongs to an account that is not
	// linked to this provider account, and the provider does not link
	// by address (linkByEmail false): neither taken over nor
	// duplicated. Same wire code, same remedy.
	ErrNotLinked = newErr("SIGN_IN_WITH_EMAIL_FIRST", CatUserExists, "An account with this email address exists and is not linked to this provider account: sign in with a code sent by email.")
	// ErrProviderPrivate: an endpoint of the provider (discovery, token,
	// userinfo, JWKS) is at a private, loopback or link-local address,
	// which latchkey does not call.
	ErrProviderPrivate = newErr("PROVIDER_UNAVAILABLE", CatInternal, "The provider's endpoints are at a private, loopback or link-local address, which latchkey does not call.")
)

// ErrWebhookNotFound is the webhook 404, the one failure without a code
// (docs/api.md, "Errors").
var ErrWebhookNotFound = newErr("", "", "Webhook not found")

// Admin errors.
var (
	ErrProjectNotFound  = newErr("PROJECT_NOT_FOUND", "", "Project not found.")
	ErrKeyNotFound      = newErr("API_KEY_NOT_FOUND", "", "API key not found.")
	ErrUserNotFound     = newErr("USER_NOT_FOUND", CatUserNotFound, "User not found.")
	ErrTemplateNotFound = newErr("TEMPLATE_NOT_FOUND", "", "Template not found.")
	ErrMethodNotFound   = newErr("EXTERNAL_METHOD_NOT_FOUND", "", "External method not found.")
	ErrMethodExists     = newErr("EXTERNAL_METHOD_EXISTS", "", "The project already has a method with that name.")
	ErrClientNotFound   = newErr("CLIENT_NOT_FOUND", "", "OpenID Connect client not found.")
)

// ErrPageTextsNotFound: the project has no texts of its hosted pages in
// the locale asked for.
var ErrPageTextsNotFound = newErr("PAGE_TEXTS_NOT_FOUND", "", "The project has no page texts in this locale.")

// Session management and abuse limits (docs/security.md, "Abuse
// bounds").
var (
	ErrSessionNotFound  = newErr("SESSION_NOT_FOUND", "", "Session not found.")
	ErrSessionRateLimit = newErr("RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many requests for this session; retry later.")
	ErrAdminThrottled   = newErr("RATE_LIMIT_EXCEEDED", CatRateLimited, "Too many failed admin token attempts from this address; retry later.")
	// ErrForbidden refuses a cross-site POST to the magic-link confirm
	// page (login CSRF).
	ErrForbidden = newErr("FORBIDDEN", "", "Cross-site request refused: open the sign-in link itself and press its button.")
)

// Invalid returns a VALIDATION_ERROR with msg.
func Invalid(format string, args ...any) *Error {
	return ErrValidation.With(fmt.Sprintf(format, args...))
}

// ErrUnavailable is the answer to a call whose write the store could not
// commit (disk full, I/O error: store.ErrWriteFailed), or whose database
// could not be reached (store.ErrUnavailable). Nothing was
// changed; the same call may succeed later (AsError gives it a
// RetryAfter of UnavailableRetry). The store logs these once a minute
// with their count, not once per call.
var ErrUnavailable = newErr("SERVICE_UNAVAILABLE", CatInternal, "The service cannot store data right now; retry later.")

// ErrBackupNotSupported answers GET /admin/backup on a store that has
// no built-in backup (PostgreSQL): the database's own tools back it up.
var ErrBackupNotSupported = newErr("NOT_SUPPORTED", "", "This server keeps its data in PostgreSQL, which latchkey does not back up itself: back up the database with pg_dump (or your database service's backups).")

// UnavailableRetry is the Retry-After of ErrUnavailable.
const UnavailableRetry = 10 * time.Second

// AsError returns err as an *Error. A failed store write
// (store.ErrWriteFailed) or a database out of reach
// (store.ErrUnavailable), alone or under an INTERNAL_ERROR, is
// ErrUnavailable with a RetryAfter of UnavailableRetry; anything else
// that is not an *Error becomes INTERNAL_ERROR carrying err as its
// cause.
func AsError(err error) *Error {
	var e *Error
	found := errors.As(err, &e)
	if found && e.Code != ErrInternal.Code {
		return e
	}
	if errors.Is(err, store.ErrWriteFailed) || errors.Is(err, store.ErrUnavailable) {
		return ErrUnavailable.Because(err).WithRetry(UnavailableRetry)
	}
	if found {
		return e
	}
	return ErrInternal.Because(err)
}

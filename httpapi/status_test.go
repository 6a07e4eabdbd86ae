package httpapi

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"latchkey/internal/testkit"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// statusTable is every error auth declares with the status it is
// answered with: the statuses auth.Error carried before the mapping moved
// here, unchanged.
var statusTable = []struct {
	name   string
	err    *auth.Error
	status int
}{
	{"ErrWebhookNotFound", auth.ErrWebhookNotFound, 404},
	{"ErrValidation", auth.ErrValidation, 400},
	{"ErrNotFound", auth.ErrNotFound, 404},
	{"ErrMethodNotAllowed", auth.ErrMethodNotAllowed, 405},
	{"ErrPayloadTooLarge", auth.ErrPayloadTooLarge, 413},
	{"ErrInternal", auth.ErrInternal, 500},
	{"ErrUnauthorized", auth.ErrUnauthorized, 401},
	{"ErrNotReady", auth.ErrNotReady, 503},
	{"ErrUnavailable", auth.ErrUnavailable, 503},
	{"ErrBackupNotSupported", auth.ErrBackupNotSupported, 501},
	{"ErrOriginNotAllowed", auth.ErrOriginNotAllowed, 403},
	{"ErrMissingAPIKey", auth.ErrMissingAPIKey, 401},
	{"ErrInvalidFormat", auth.ErrInvalidFormat, 401},
	{"ErrAPIKeyNotFound", auth.ErrAPIKeyNotFound, 401},
	{"ErrHashMismatch", auth.ErrHashMismatch, 401},
	{"ErrAPIKeyRevoked", auth.ErrAPIKeyRevoked, 401},
	{"ErrAPIKeyExpired", auth.ErrAPIKeyExpired, 401},
	{"ErrInvalidAPIKey", auth.ErrInvalidAPIKey, 401},
	{"ErrRateLimitExceeded", auth.ErrRateLimitExceeded, 429},
	{"ErrKeyInternal", auth.ErrKeyInternal, 401},
	{"ErrInvalidSession", auth.ErrInvalidSession, 401},
	{"ErrInvalidCode", auth.ErrInvalidCode, 401},
	{"ErrCodeExpired", auth.ErrCodeExpired, 401},
	{"ErrCodeLocked", auth.ErrCodeLocked, 401},
	{"ErrTooManyRequests", auth.ErrTooManyRequests, 429},
	{"ErrInvalidToken", auth.ErrInvalidToken, 401},
	{"ErrCodeNotBound", auth.ErrCodeNotBound, 401},
	{"ErrLinkUsed", auth.ErrLinkUsed, 401},
	{"ErrLinkExpired", auth.ErrLinkExpired, 401},
	{"ErrInvalidRedirect", auth.ErrInvalidRedirect, 400},
	{"ErrUserDisabled", auth.ErrUserDisabled, 403},
	{"ErrEmailInUse", auth.ErrEmailInUse, 409},
	{"ErrExternalIDConflict", auth.ErrExternalIDConflict, 409},
	{"ErrExternalIDMismatch", auth.ErrExternalIDMismatch, 409},
	{"ErrRiskBlocked", auth.ErrRiskBlocked, 403},
	{"ErrVerificationFailed", auth.ErrVerificationFailed, 401},
	{"ErrTOTPNotEnrolled", auth.ErrTOTPNotEnrolled, 404},
	{"ErrSMSNotEnrolled", auth.ErrSMSNotEnrolled, 404},
	{"ErrAlreadyEnrolled", auth.ErrAlreadyEnrolled, 409},
	{"ErrTooManyAttempts", auth.ErrTooManyAttempts, 429},
	{"ErrSendFailed", auth.ErrSendFailed, 502},
	{"ErrStepUpRequired", auth.ErrStepUpRequired, 403},
	{"ErrInvalidCredential", auth.ErrInvalidCredential, 400},
	{"ErrChallengeExpired", auth.ErrChallengeExpired, 400},
	{"ErrUnknownCredential", auth.ErrUnknownCredential, 401},
	{"ErrUserExists", auth.ErrUserExists, 409},
	{"ErrPasskeyNotFound", auth.ErrPasskeyNotFound, 404},
	{"ErrNoPasskey", auth.ErrNoPasskey, 404},
	{"ErrPasskeyLoginInternal", auth.ErrPasskeyLoginInternal, 401},
	{"ErrDemoLiveKey", auth.ErrDemoLiveKey, 403},
	{"ErrInvalidSignature", auth.ErrInvalidSignature, 401},
	{"ErrStaleTimestamp", auth.ErrStaleTimestamp, 401},
	{"ErrWrongPattern", auth.ErrWrongPattern, 400},
	{"ErrInvalidPayload", auth.ErrInvalidPayload, 400},
	{"ErrInactiveRegistration", auth.ErrInactiveRegistration, 403},
	{"ErrReplayed", auth.ErrReplayed, 401},
	{"ErrProjectNotFound", auth.ErrProjectNotFound, 404},
	{"ErrKeyNotFound", auth.ErrKeyNotFound, 404},
	{"ErrUserNotFound", auth.ErrUserNotFound, 404},
	{"ErrMethodNotFound", auth.ErrMethodNotFound, 404},
	{"ErrTemplateNotFound", auth.ErrTemplateNotFound, 404},
	{"ErrPageTextsNotFound", auth.ErrPageTextsNotFound, 404},
	{"ErrClientNotFound", auth.ErrClientNotFound, 404},
	{"ErrMethodExists", auth.ErrMethodExists, 409},
	{"ErrProviderNotFound", auth.ErrProviderNotFound, 404},
	{"ErrProviderExists", auth.ErrProviderExists, 409},
	{"ErrInvalidState", auth.ErrInvalidState, 400},
	{"ErrStateExpired", auth.ErrStateExpired, 400},
	{"ErrOAuthDenied", auth.ErrOAuthDenied, 401},
	{"ErrInvalidIDToken", auth.ErrInvalidIDToken, 401},
	{"ErrProviderUnavailable", auth.ErrProviderUnavailable, 502},
	{"ErrProviderPrivate", auth.ErrProviderPrivate, 502},
	{"ErrEmailNotVerified", auth.ErrEmailNotVerified, 403},
	{"ErrSignInWithEmailFirst", auth.ErrSignInWithEmailFirst, 409},
	{"ErrNotLinked", auth.ErrNotLinked, 409},
	{"ErrSessionNotFound", auth.ErrSessionNotFound, 404},
	{"ErrSessionRateLimit", auth.ErrSessionRateLimit, 429},
	{"ErrAdminThrottled", auth.ErrAdminThrottled, 429},
	{"ErrForbidden", auth.ErrForbidden, 403},
}

// TestStatusOf: each declared error, and copies derived from it (another
// message, a cause, a wait, as auth makes them), answers with its status;
// the failures that share a code with others of another status
// (INTERNAL_ERROR, INVALID_CREDENTIAL, API_KEY_NOT_FOUND) are told apart.
func TestStatusOf(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "maps errors to statuses")
	for _, tc := range statusTable {
		for _, e := range []*auth.Error{tc.err, tc.err.With("other text"), tc.err.Because(errors.New("cause")), tc.err.WithRetry(time.Second)} {
			if got := statusOf(e); got != tc.status {
				t.Errorf("statusOf(%v)=%d, want %d", e, got, tc.status)
			}
		}
	}
	if got := statusOf(auth.AsError(errors.New("disk on fire"))); got != http.StatusInternalServerError {
		t.Errorf("statusOf(non-auth error)=%d, want 500", got)
	}
	if got := statusOf(auth.Invalid("x is required.")); got != http.StatusBadRequest {
		t.Errorf("statusOf(Invalid)=%d, want 400", got)
	}
}

// TestStatusTableComplete: every exported error auth/errors.go declares
// is in statusTable, so a new one cannot fall to 500 unnoticed.
func TestStatusTableComplete(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "parses auth/errors.go")
	f, err := parser.ParseFile(token.NewFileSet(), "../auth/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tc := range statusTable {
		listed[tc.name] = true
	}
	declared := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				if !strings.HasPrefix(name.Name, "Err") {
					continue
				}
				declared++
				if !listed[name.Name] {
					t.Errorf("auth.%s is not in statusTable", name.Name)
				}
			}
		}
	}
	if declared != len(statusTable) {
		t.Errorf("auth/errors.go declares %d errors, statusTable lists %d", declared, len(statusTable))
	}
}

// TestRouteStatus: a route's own status (the by-external passkey routes'
// 401 RATE_LIMIT_EXCEEDED) wins over statusOf, keeps the code, message
// and Retry-After.
func TestRouteStatus(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "writes an error envelope")
	s := &Server{log: slog.New(slog.DiscardHandler)}
	rec := httptest.NewRecorder()
	s.writeError(rec, withStatus(http.StatusUnauthorized, auth.ErrRateLimitExceeded.WithRetry(1500*time.Millisecond)))
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), `"code":"RATE_LIMIT_EXCEEDED"`) {
		t.Fatalf("got %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

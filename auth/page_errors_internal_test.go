package auth

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestPageErrorKeys: each failure key's built-in English is its
// failure's message, keys and messages are not shared, a code's key is
// named for the code, and a failure finds its key whatever copy it is
// (a cause, a wait), by its own meaning first, then by its code.
func TestPageErrorKeys(t *testing.T) {
	keys, msgs := map[string]bool{}, map[string]string{}
	for _, pe := range pageErrors {
		if keys[pe.key] {
			t.Errorf("key %s listed twice", pe.key)
		}
		keys[pe.key] = true
		if BuiltInPageTexts()[pe.key] != pe.err.Message {
			t.Errorf("%s: built-in %q, want its failure's message %q", pe.key, BuiltInPageTexts()[pe.key], pe.err.Message)
		}
		if k, dup := msgs[pe.err.Message]; dup {
			t.Errorf("%s and %s have the same message", k, pe.key)
		}
		msgs[pe.err.Message] = pe.key
		if !strings.HasPrefix(pe.key, "error_") {
			t.Errorf("%s: a failure's key starts with error_", pe.key)
		}
	}
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{ErrInvalidCode, "error_invalid_code"},
		{ErrCodeExpired.Because(errors.New("cause")).WithRetry(5), "error_code_expired"},
		{ErrCodeLocked, "error_code_locked"},
		{errCodeUsedUp, "error_code_locked"}, // INVALID_CODE with the lockout's words
		{ErrInvalidCode.With("Some other words."), "error_invalid_code"},
		{Invalid("phone is required: no phone is enrolled for SMS yet."), "error_validation_error"},
		{errEmailInvalid, "error_email_invalid"},
		{ErrStaleForm, "error_stale_form"},
		{ErrUserCodeThrottled, "error_user_code_throttled"},
		{ErrSessionRateLimit, "error_rate_limit_exceeded"},
		{ErrAdminThrottled, "error_rate_limit_exceeded"},
		{newErr("NO_SUCH_CODE", "", "x"), ""},
		{ErrWebhookNotFound, ""},
	} {
		if got := PageErrorKey(c.err); got != c.want {
			t.Errorf("PageErrorKey(%s %q) = %q, want %q", c.err.Code, c.err.Message, got, c.want)
		}
	}
}

// TestPageLookErrorText: a page shows the project's wording of a
// failure's key, else the failure's own message (more precise English
// than the code's key, when it has one).
func TestPageLookErrorText(t *testing.T) {
	builtin := BuiltInPageLook()
	texts := maps.Clone(BuiltInPageTexts())
	texts["error_code_expired"] = "Code expiré."
	texts["error_validation_error"] = "Saisie invalide."
	fr := &PageLook{Lang: "fr", Texts: texts}
	for _, c := range []struct {
		look *PageLook
		err  error
		want string
	}{
		{builtin, ErrCodeExpired, ErrCodeExpired.Message},
		{fr, ErrCodeExpired.Because(errors.New("cause")), "Code expiré."},
		{builtin, errEmailRequired, "email is required."},
		{fr, errEmailRequired, "email is required."}, // its own key, not worded: its English
		{fr, Invalid("phone is required."), "Saisie invalide."},
		{builtin, Invalid("phone is required."), "phone is required."},
		{fr, ErrInvalidCode, ErrInvalidCode.Message},
		{fr, errors.New("not an auth failure"), ErrInternal.Message},
	} {
		if got := c.look.ErrorText(c.err); got != c.want {
			t.Errorf("%s ErrorText(%v) = %q, want %q", c.look.Lang, c.err, got, c.want)
		}
	}
}

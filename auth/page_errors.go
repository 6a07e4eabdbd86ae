package auth

import (
	"strings"
	"sync"
)

// The words of the failures the hosted pages show (docs/oidc.md,
// "Branding and languages"). Each failure a page can show has a text
// key, looked up by its wire code: error_<code in lower case> (a wrong
// code, INVALID_CODE, is error_invalid_code). A code that carries
// failures of different meanings (an expired code and a wrong one are
// both INVALID_CODE) has a key for each of those failures too, found by
// the failure's message: pageErrors lists them. The built-in English of
// every such key is the failure's message, and a page shows the
// project's wording of the key in its language, else the failure's own
// message: the English a page shows is the API's message, which the
// JSON answers keep whatever a project uploads.

// Refusals the hosted pages themselves make, shown on the error page.
var (
	// ErrUnknownClient: the request names no client of the project.
	ErrUnknownClient = Invalid("The application that sent you here is not known to this sign-in service.")
	// ErrUnregisteredReturn: the request's return address is not one
	// its client registered.
	ErrUnregisteredReturn = Invalid("The application that sent you here asked to return to an address it has not registered.")
)

// pageErrors are the text keys of failures the pages show, each with
// the failure whose message is the key's built-in English: a key per
// wire code (error_<code>, with the code's usual failure) and a key per
// failure of its own meaning under a shared code.
var pageErrors = []struct {
	key string
	err *Error
}{
	// By wire code.
	{"error_validation_error", ErrValidation},
	{"error_not_found", ErrNotFound},
	{"error_internal_error", ErrInternal},
	{"error_service_unavailable", ErrUnavailable},
	{"error_invalid_session", ErrInvalidSession},
	{"error_invalid_code", ErrInvalidCode},
	{"error_too_many_requests", ErrTooManyRequests},
	{"error_invalid_token", ErrInvalidToken},
	{"error_invalid_redirect_url", ErrInvalidRedirect},
	{"error_user_disabled", ErrUserDisabled},
	{"error_email_in_use", ErrEmailInUse},
	{"error_risk_blocked", ErrRiskBlocked},
	{"error_verification_failed", ErrVerificationFailed},
	{"error_totp_not_enrolled", ErrTOTPNotEnrolled},
	{"error_sms_not_enrolled", ErrSMSNotEnrolled},
	{"error_already_enrolled", ErrAlreadyEnrolled},
	{"error_too_many_attempts", ErrTooManyAttempts},
	{"error_send_failed", ErrSendFailed},
	{"error_step_up_required", ErrStepUpRequired},
	{"error_invalid_credential", ErrInvalidCredential},
	{"error_challenge_expired", ErrChallengeExpired},
	{"error_user_exists", ErrUserExists},
	{"error_passkey_not_found", ErrPasskeyNotFound},
	{"error_user_not_found", ErrUserNotFound},
	{"error_invalid_state", ErrInvalidState},
	{"error_oauth_denied", ErrOAuthDenied},
	{"error_invalid_id_token", ErrInvalidIDToken},
	{"error_provider_unavailable", ErrProviderUnavailable},
	{"error_email_not_verified", ErrEmailNotVerified},
	{"error_sign_in_with_email_first", ErrSignInWithEmailFirst},
	{"error_project_not_found", ErrProjectNotFound},
	{"error_client_not_found", ErrClientNotFound},
	{"error_session_not_found", ErrSessionNotFound},
	{"error_consent_not_found", ErrConsentNotFound},
	{"error_rate_limit_exceeded", ErrSessionRateLimit},
	{"error_forbidden", ErrForbidden},
	{"error_access_denied", ErrAccessDenied},
	{"error_sign_in_required", ErrSignInRequired},
	// Failures of their own meaning under a shared code.
	{"error_email_required", errEmailRequired},
	{"error_email_not_ascii", errEmailNotASCII},
	{"error_email_too_long", errEmailTooLong},
	{"error_email_invalid", errEmailInvalid},
	{"error_code_required", errCodeRequired},
	{"error_code_not_digits", errCodeNotDigits},
	{"error_code_expired", ErrCodeExpired},
	{"error_code_locked", ErrCodeLocked},
	{"error_code_not_pending", errNoPendingCode},
	{"error_address_code_not_pending", errNoAddressCode},
	{"error_link_used", ErrLinkUsed},
	{"error_link_expired", ErrLinkExpired},
	{"error_links_throttled", errTooManyLinks},
	{"error_sms_throttled", errSMSThrottled},
	{"error_sms_locked", errSMSLocked},
	{"error_sms_capped", errSMSCapped},
	{"error_step_up_factor", errStepUpFactor},
	{"error_step_up_stale", errStepUpStale},
	{"error_no_second_factor", errNoSecondFactor},
	{"error_no_backup_here", errNoBackupHere},
	{"error_no_forward_second_factor", errNoForwardSecondFactor},
	{"error_no_passkey", ErrNoPasskey},
	{"error_unknown_passkey", ErrUnknownCredential},
	{"error_passkey_registered", errPasskeyRegistered},
	{"error_passkey_other_account", errPasskeyOtherAccount},
	{"error_state_expired", ErrStateExpired},
	{"error_not_linked", ErrNotLinked},
	{"error_auth_request_gone", ErrAuthRequestGone},
	{"error_consent_not_here", errConsentNotHere},
	{"error_user_code_invalid", ErrUserCodeInvalid},
	{"error_user_code_throttled", ErrUserCodeThrottled},
	{"error_device_signed_out", errDeviceSignedOut},
	{"error_stale_form", ErrStaleForm},
	{"error_unknown_client", ErrUnknownClient},
	{"error_unregistered_return", ErrUnregisteredReturn},
	{"error_no_forward_auth", errNoForwardAuth},
	{"error_return_not_under_domain", errReturnNotUnderDomain},
}

// pageErrorByMessage is the key of each failure of pageErrors, by its
// message.
var pageErrorByMessage = sync.OnceValue(func() map[string]int {
	byMessage := make(map[string]int, len(pageErrors))
	for i, pe := range pageErrors {
		if _, dup := byMessage[pe.err.Message]; !dup {
			byMessage[pe.err.Message] = i
		}
	}
	return byMessage
})

// PageErrorKey returns the text key of failure e on a page: the key of
// its own meaning when its message is one (pageErrors), else its wire
// code's, else "" (a failure no page words: its message is shown).
func PageErrorKey(e *Error) string {
	if i, ok := pageErrorByMessage()[e.Message]; ok && pageErrors[i].err.Code == e.Code {
		return pageErrors[i].key
	}
	if k := "error_" + strings.ToLower(e.Code); e.Code != "" {
		if _, ok := BuiltInPageTexts()[k]; ok {
			return k
		}
	}
	return ""
}

// ErrorText returns what a page in look l shows for err: the project's
// wording of its text key (PageErrorKey) in the page's language, else
// the failure's own message (the key's built-in English, or a more
// precise English of the same code).
func (l *PageLook) ErrorText(err error) string {
	e := AsError(err)
	k := PageErrorKey(e)
	if v, ok := l.Texts[k]; ok && k != "" && v != BuiltInPageTexts()[k] {
		return v
	}
	return e.Message
}

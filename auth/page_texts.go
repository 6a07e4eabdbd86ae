package auth

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"

	"latchkey/store"
)

// Texts of the hosted pages (docs/oidc.md, "Branding and languages").
// Every text a hosted page shows (titles, instructions, labels, buttons)
// has a key; BuiltInPageTexts holds the English of every key, and a
// project may upload, per locale, its own wording of any of them. A page
// shows each key in the first locale of the request's chain (the
// authorization request's ui_locales, then the browser's
// Accept-Language, each tag followed by its parents, then "en") that the
// project has worded it in, else the built-in English: the fallback of
// the mail templates, key by key.
//
// They are stored as templates of kind store.TemplateKindPage (one per
// locale, Text a JSON object), so they travel with `latchkey copy`, go
// with their project and share the templates' feed; the service keeps
// each project's set parsed (pageTexts), dropped after a change here
// and, on other replicas, by store.ChangeTemplates.

// BuiltInPageTexts is the built-in English of every text key of the
// hosted pages. A text may name a value the page fills in: {email} (the
// address typed), {client} (the application's name), {provider} (a
// sign-in provider's name), {host} (where a self-registered application
// sends the browser back), and a few others where the key says. The
// keys of failures are added from pageErrors (page_errors.go). Read
// only. It is made at first use, not at start.
var BuiltInPageTexts = sync.OnceValue(func() map[string]string {
	texts := map[string]string{
		// Sign in, code, magic link.
		"sign_in_title":     "Sign in",
		"sign_in_text":      "Enter your email address: we will send you a code.",
		"email_label":       "Email address",
		"continue_button":   "Continue",
		"code_title":        "Enter your code",
		"code_text":         "We sent a code to {email}. Enter it to sign in.",
		"code_label":        "Code",
		"sign_in_button":    "Sign in",
		"passkey_button":    "Sign in with a passkey",
		"provider_button":   "Continue with {provider}",
		"link_button":       "Email me a sign-in link instead",
		"link_sent_title":   "Check your email",
		"link_sent_text":    "We sent a sign-in link to {email}. Open it in this browser to continue; it works once, for 15 minutes.",
		"link_confirm_text": "Press the button to finish signing in.",
		// Second factor.
		"mfa_title":                    "Second factor",
		"mfa_totp_text":                "Enter the code from your authenticator app.",
		"mfa_enroll_text":              "This application requires a second factor, and your account has none yet: set up an authenticator app to continue.",
		"mfa_passkey_first_text":       "This application requires a second factor. Sign in with your passkey first, then set up an authenticator app.",
		"mfa_passkey_unavailable_text": "This application requires a second factor. Setting one up needs a sign-in with your passkey, which this page cannot offer: ask the application's administrator.",
		"mfa_sms_text":                 "Enter the code we text to your phone. Press “Text me a code” to get one.",
		"mfa_sms_sent_text":            "We texted a code to your phone. Enter it to continue.",
		"mfa_backup_text":              "Enter one of your backup codes. Each works once.",
		"backup_code_label":            "Backup code",
		"sms_button":                   "Text me a code",
		"use_totp_link":                "Use your authenticator app",
		"use_sms_link":                 "Use a text message",
		"use_backup_link":              "Use a backup code",
		// Consent and device.
		"consent_title":          "Allow {client}?",
		"consent_text":           "You are signed in. {client} is not run by this service: allow it only if you trust it. You can revoke this later.",
		"consent_asks":           "{client} would like to:",
		"consent_returns_to":     "This application registered itself: after you answer, you go back to {host}. Continue only if you know that address.",
		"allow_button":           "Allow",
		"deny_button":            "Deny",
		"choose_allow_deny":      "Choose Allow or Deny.",
		"scope_openid":           "Know who you are: your account identifier",
		"scope_email":            "See your email address and whether it is verified",
		"scope_profile":          "See your name",
		"scope_groups":           "See the groups you belong to",
		"scope_offline_access":   "Stay connected to your account while you are away, until you revoke it",
		"scope_other":            "Use the permission “{scope}”",
		"device_title":           "Connect a device",
		"device_text":            "Enter the code your device shows.",
		"device_confirm_text":    "Check that this code is the one your device shows. Allow only a device you are using now.",
		"device_asks":            "{client} asks to:",
		"device_connected_title": "Device connected",
		"device_connected_text":  "You can go back to your device: it is signed in.",
		"device_denied_title":    "Device not connected",
		"device_denied_text":     "You denied the device access. You can close this page.",
		// Signing out, errors.
		"sign_out_title":       "Sign out",
		"sign_out_text":        "Do you want to sign out? This ends your session here and in the applications you signed in to with it.",
		"sign_out_button":      "Sign out",
		"signed_out_title":     "Signed out",
		"signed_out_text":      "You are signed out.",
		"sign_out_error_title": "Sign-out failed",
		"error_title":          "Sign-in failed",
		// The pages' own refusals (a failure of a use case is worded by its
		// code: page_errors.go).
		"error_request_unreadable":          "The sign-in request could not be read.",
		"error_form_unreadable":             "The form could not be read.",
		"error_other_browser":               "This sign-in cannot be completed in this browser. Go back to the application and sign in again.",
		"error_sign_in_ended":               "Your sign-in has ended. Go back to the application and sign in again.",
		"error_form_not_from_page":          "This form was not sent from its page in this browser. Go back to the application and sign in again.",
		"error_device_form_not_from_page":   "This form was not sent from its page in this browser. Open the device page again.",
		"error_forward_form_not_from_page":  "This form was not sent from its page in this browser. Open the application again and sign in.",
		"error_sign_out_form_not_from_page": "This form was not sent from its page in this browser. Go back to the application and sign out again.",
		"error_open_from_app":               "Open the sign-in page from the application.",
		"error_sign_in_first":               "Sign in first: open the application's page.",
		"error_forward_sign_in_ended":       "Your sign-in has ended: sign in again.",
		"error_provider_incomplete":         "The sign-in with the provider did not complete. Try again, or sign in another way.",
		"error_provider_other_browser":      "This sign-in was started in another browser. Sign in again here.",
		"error_no_such_page":                "This page does not exist.",
		// The account page.
		"account_title":        "Your account",
		"account_signed_in_as": "Signed in as",
		"account_sessions":     "Sessions",
		"account_passkeys":     "Passkeys",
		"account_totp":         "Authenticator app",
		"account_backup_codes": "Backup codes",
		"account_apps":         "Apps",
		"account_email":        "Email address",
		// The account page's sessions, factors, apps and address.
		"account_not_verified":        "(not verified)",
		"account_this_browser":        "This browser",
		"account_session_meta":        "Signed in {created} · last seen {seen}",
		"account_end_session_button":  "End this session",
		"account_end_others_button":   "End all other sessions",
		"account_passkey_added":       "Passkey added {date}",
		"account_remove_button":       "Remove",
		"account_no_passkeys":         "No passkeys yet.",
		"account_passkey_add":         "Add a passkey",
		"account_totp_on_text":        "Set up: sign-ins ask for its code.",
		"account_totp_off_text":       "Not set up.",
		"account_totp_setup":          "Set up an authenticator app",
		"account_totp_remove_button":  "Remove the authenticator app",
		"account_backup_left":         "{count} unused backup codes.",
		"account_backup_button":       "Make new backup codes",
		"account_app_allowed":         "Allowed {date}: {scopes}",
		"account_app_revoke_button":   "Remove access",
		"account_no_apps":             "No apps have access to your account.",
		"account_email_label":         "New email address",
		"account_email_button":        "Change address",
		"account_confirm_button":      "Confirm",
		"account_cancel_link":         "Cancel",
		"account_back_link":           "Back to your account",
		"account_done_link":           "Done",
		"account_reload_link":         "Reload the account page",
		"account_sign_in_again":       "Sign in again",
		"account_stale_title":         "This form is out of date",
		"account_passkey_text":        "Your browser or device will ask you to create a passkey for this account.",
		"account_passkey_create":      "Create the passkey",
		"account_passkey_confirm":     "Confirm with a passkey",
		"account_totp_scan_text":      "Scan this code with your authenticator app, or enter the key by hand. Then enter the code the app shows.",
		"account_totp_qr_alt":         "QR code for your authenticator app",
		"account_totp_key_label":      "Key:",
		"account_totp_confirm_text":   "Enter the current code from the authenticator app you just set up.",
		"account_totp_app_code_label": "Code from the app",
		"account_backup_title":        "Your new backup codes",
		"account_backup_text":         "Keep these codes somewhere safe: each signs you in once if you lose your other factors. They are shown only now; your older codes no longer work.",
		"account_email_confirm_title": "Confirm your new address",
		"account_email_code_text":     "We sent a code to {email}. Enter it to make it your address.",
		"account_stepup_title":        "Confirm it is you",
		"account_stepup_text":         "This change needs a recent proof that it is you.",
		"account_stepup_totp_label":   "Code from your authenticator app",
		"account_stepup_sign_in_text": "Sign in again with your email address; you come back here after.",
		"account_sms_sent_text":       "We texted a code to your phone ending in {digits}.",
		"account_sms_code_label":      "Code from the text message",
		"account_sms_again_button":    "Text me a new code",
		"account_sms_offer_text":      "Or get a code by text message to your phone ending in {digits}.",
		"passkey_unsupported":         "This browser cannot use passkeys.",
		"passkey_waiting":             "Waiting for your passkey…",
		"passkey_failed":              "The passkey did not work ({error}). Try again.",
		// The account page's notices after a change.
		"account_notice_session_ended":   "The session was ended.",
		"account_notice_others_ended":    "Your other sessions were ended.",
		"account_notice_passkey_added":   "The passkey was added.",
		"account_notice_passkey_removed": "The passkey was removed.",
		"account_notice_totp_set_up":     "Your authenticator app is set up.",
		"account_notice_email_changed":   "Your email address was changed. Your other sessions were ended.",
		"account_notice_app_revoked":     "The app no longer has access: it asks you again next time.",
		"account_notice_totp_removed":    "Your authenticator app was removed.",
		"account_notice_verified":        "Thank you: you may now make the change.",
	}
	for _, pe := range pageErrors {
		texts[pe.key] = pe.err.Message
	}
	return texts
})

// Page text limits: a text's length in characters, and how many
// locales a project may word its pages in.
const (
	maxPageText        = 500
	maxPageTextLocales = 100
)

// PageTextsView is one locale's texts as the admin API shows them.
type PageTextsView struct {
	Locale    string            `json:"locale"`
	Texts     map[string]string `json:"texts"`
	UpdatedAt string            `json:"updatedAt"`
}

// pageTextSet is a project's uploaded texts, by locale then key.
type pageTextSet map[string]map[string]string

// checkPageTexts validates the body of PUT .../page-texts/:locale: a
// JSON object of known keys to plain texts (UTF-8, no control
// characters, 1 to maxPageText characters). Errors: 400
// VALIDATION_ERROR naming every unknown key, or the first bad text.
func checkPageTexts(raw json.RawMessage) (map[string]string, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		return nil, Invalid("The body must be a JSON object of text keys to strings.")
	}
	var unknown []string
	for k := range in {
		if _, ok := BuiltInPageTexts()[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		for i, k := range unknown {
			unknown[i] = clip(k)
		}
		return nil, Invalid("Unknown text keys: %s (docs/oidc.md lists the keys).", strings.Join(unknown, ", "))
	}
	out := make(map[string]string, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		var v string
		if err := json.Unmarshal(in[k], &v); err != nil {
			return nil, Invalid("%s must be a string.", k)
		}
		v = strings.TrimSpace(v)
		if v == "" || utf8.RuneCountInString(v) > maxPageText || !utf8.ValidString(v) ||
			strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return nil, Invalid("%s must be 1 to %d characters of plain text on one line.", k, maxPageText)
		}
		out[k] = v
	}
	return out, nil
}

// viewPageTexts returns t, a stored locale's texts, as the API shows
// them.
func viewPageTexts(t *store.Template) (PageTextsView, error) {
	v := PageTextsView{Locale: t.Locale, Texts: map[string]string{}, UpdatedAt: formatTime(t.UpdatedAt)}
	return v, json.Unmarshal([]byte(t.Text), &v.Texts)
}

// PutPageTexts stores a project's texts of its hosted pages in locale,
// replacing that locale's (keys left out fall back). Errors: 400
// VALIDATION_ERROR (bad locale, unknown keys, bad texts, too many
// locales), 404 PROJECT_NOT_FOUND.
func (s *Service) PutPageTexts(ctx context.Context, projectID, locale string, raw json.RawMessage) (PageTextsView, error) {
	loc, err := ParseLocale(locale)
	if err != nil {
		return PageTextsView{}, err
	}
	texts, err := checkPageTexts(raw)
	if err != nil {
		return PageTextsView{}, err
	}
	body, err := json.Marshal(texts)
	if err != nil {
		return PageTextsView{}, internal(err)
	}
	t := &store.Template{ProjectID: projectID, Kind: store.TemplateKindPage, Locale: loc, Text: string(body), UpdatedAt: s.now().UTC()}
	err = s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		ts, err := tx.Templates(projectID)
		if err != nil {
			return err
		}
		n := 0
		for _, o := range ts {
			if o.Kind == store.TemplateKindPage && o.Locale != loc {
				n++
			}
		}
		if n >= maxPageTextLocales {
			return Invalid("A project words its pages in at most %d locales.", maxPageTextLocales)
		}
		return tx.PutTemplate(t)
	})
	if err != nil {
		return PageTextsView{}, internal(err)
	}
	s.pageTexts.invalidate(projectID)
	return PageTextsView{Locale: loc, Texts: texts, UpdatedAt: formatTime(t.UpdatedAt)}, nil
}

// ListPageTexts returns the locales a project words its pages in, with
// their texts, by locale. Errors: 404 PROJECT_NOT_FOUND.
func (s *Service) ListPageTexts(ctx context.Context, projectID string) ([]PageTextsView, error) {
	out := []PageTextsView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		ts, err := tx.Templates(projectID)
		for _, t := range ts {
			if t.Kind != store.TemplateKindPage {
				continue
			}
			v, err := viewPageTexts(t)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return err
	})
	return out, internal(err)
}

// PageTexts returns a project's own texts in locale (exactly that
// locale: no fallback). Errors: 400 VALIDATION_ERROR (bad locale), 404
// PROJECT_NOT_FOUND, 404 PAGE_TEXTS_NOT_FOUND.
func (s *Service) PageTexts(ctx context.Context, projectID, locale string) (PageTextsView, error) {
	loc, err := ParseLocale(locale)
	if err != nil {
		return PageTextsView{}, err
	}
	var v PageTextsView
	err = s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		t, err := tx.Template(projectID, store.TemplateKindPage, loc)
		if errors.Is(err, store.ErrNotFound) {
			return ErrPageTextsNotFound
		} else if err != nil {
			return err
		}
		v, err = viewPageTexts(t)
		return err
	})
	return v, internal(err)
}

// DeletePageTexts removes a project's texts in locale: its pages fall
// back again. Errors: 400 VALIDATION_ERROR, 404 PROJECT_NOT_FOUND, 404
// PAGE_TEXTS_NOT_FOUND.
func (s *Service) DeletePageTexts(ctx context.Context, projectID, locale string) error {
	loc, err := ParseLocale(locale)
	if err != nil {
		return err
	}
	err = s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		if _, err := tx.Template(projectID, store.TemplateKindPage, loc); errors.Is(err, store.ErrNotFound) {
			return ErrPageTextsNotFound
		} else if err != nil {
			return err
		}
		return tx.DeleteTemplate(projectID, store.TemplateKindPage, loc)
	})
	if err != nil {
		return internal(err)
	}
	s.pageTexts.invalidate(projectID)
	return nil
}

// projectPageTexts returns project id's uploaded texts, from the cache
// or read and parsed (a stored locale that does not parse is left out).
func (s *Service) projectPageTexts(ctx context.Context, projectID string) (pageTextSet, error) {
	if set, ok := s.pageTexts.get(projectID); ok {
		return set, nil
	}
	gen := s.pageTexts.generation()
	set := pageTextSet{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		ts, err := tx.Templates(projectID)
		for _, t := range ts {
			if t.Kind != store.TemplateKindPage {
				continue
			}
			var m map[string]string
			if json.Unmarshal([]byte(t.Text), &m) == nil {
				set[t.Locale] = m
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.pageTexts.fill(projectID, set, gen)
	return set, nil
}

// pageLocaleChain returns the locales a page tries, in order: each tag
// of ui (the authorization request's ui_locales) with its parents, then
// each of the Accept-Language header accept with its parents (at most
// maxLocaleAttempts tags of each), then "en".
func pageLocaleChain(ui []string, accept string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(tag language.Tag) {
		for t := tag; t != language.Und; t = t.Parent() {
			if s := t.String(); !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	for i, u := range ui {
		if i == maxLocaleAttempts {
			break
		}
		if t, err := language.Parse(u); err == nil && len(u) <= 35 {
			add(t)
		}
	}
	if accept != "" && len(accept) <= 256 {
		if tags, _, err := language.ParseAcceptLanguage(accept); err == nil {
			for i, t := range tags {
				if i == maxLocaleAttempts {
					break
				}
				add(t)
			}
		}
	}
	add(language.English)
	return out
}

// PageLook is how a hosted page looks for one request: its language,
// its project's branding and every text key in that language.
type PageLook struct {
	// Lang is the page's language (<html lang>): the first locale of the
	// chain the project words its pages in, else "en".
	Lang string
	// Name is the project's displayName, else its name.
	Name string
	// LogoURL is the project's logo (https), and LogoOrigin its origin
	// (for the page's Content-Security-Policy); empty without one.
	LogoURL, LogoOrigin string
	// Accent is the project's accent colour ("#rrggbb"), empty for the
	// built-in.
	Accent string
	// Texts holds every key of BuiltInPageTexts.
	Texts map[string]string
}

// BuiltInPageLook is the look of a page with no project (or when its
// project cannot be read): English, unbranded.
func BuiltInPageLook() *PageLook {
	return &PageLook{Lang: "en", Texts: BuiltInPageTexts()}
}

// PageLook returns how project projectID's hosted pages look for a
// request: the locale chain of authRequestID's ui_locales (when the
// page belongs to an authorization request; "" otherwise) and of the
// browser's Accept-Language header accept. A project that does not
// exist gets BuiltInPageLook; a store failure is returned with it.
func (s *Service) PageLook(ctx context.Context, projectID, authRequestID, accept string) (*PageLook, error) {
	p, err := s.project(ctx, projectID)
	if errors.Is(err, store.ErrNotFound) {
		return BuiltInPageLook(), nil
	} else if err != nil {
		return BuiltInPageLook(), err
	}
	var ui []string
	if authRequestID != "" {
		err := s.db.View(ctx, func(tx store.Tx) error {
			r, err := s.liveAuthRequest(tx, projectID, authRequestID)
			if err == nil {
				ui = r.UILocales
			}
			return nil
		})
		if err != nil {
			return BuiltInPageLook(), err
		}
	}
	set, err := s.projectPageTexts(ctx, projectID)
	if err != nil {
		return BuiltInPageLook(), err
	}
	look := &PageLook{Lang: "en", Name: p.Name, LogoURL: p.LogoURL, Accent: p.AccentColor, Texts: BuiltInPageTexts()}
	if p.DisplayName != "" {
		look.Name = p.DisplayName
	}
	if p.LogoURL != "" {
		look.LogoOrigin, _ = logoOrigin(p.LogoURL)
	}
	if len(set) == 0 {
		return look, nil
	}
	chain := pageLocaleChain(ui, accept)
	langSet := false
	texts := make(map[string]string, len(BuiltInPageTexts()))
	for k, v := range BuiltInPageTexts() {
		texts[k] = v
	}
	// Last to first, so that the first locale's texts win.
	for i := len(chain) - 1; i >= 0; i-- {
		maps.Copy(texts, set[chain[i]])
	}
	for _, loc := range chain {
		if set[loc] != nil && !langSet {
			look.Lang, langSet = loc, true
		}
	}
	look.Texts = texts
	return look, nil
}

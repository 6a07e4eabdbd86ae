package auth_test

import (
	"testing"

	"latchkey/auth"
)

// TestForwardAuthBackupCodeUseCase: a user with TOTP whose forward-auth
// sign-in waits for the second factor is offered their backup codes
// (ForwardAuthFactors), unless the address's rule is mfa, where a backup
// code is refused (403 STEP_UP_REQUIRED) and consumes nothing; a wrong
// code is the API's 401 INVALID_CODE, recorded; the right one signs in
// anew (a session of method forward-auth proven by backup_code, the
// events backup_code/verify and session.created), which the rule lets
// through but an mfa rule does not; the code is then used up.
func TestForwardAuthBackupCodeUseCase(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	fa := []byte(`{"cookieDomain":"example.com","rules":[{"host":"app.example.com","pathPrefix":"/admin/","policy":"mfa"},{"host":"app.example.com","policy":"signed_in"}]}`)
	_, err := ts.UpdateProject(ctx, ts.project.ID, auth.ProjectInput{ForwardAuth: fa})
	ok(t, err)
	const addr = "fa-backup@example.com"
	_, pr := ts.signIn(addr)
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	codes, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
	ok(t, err)

	page, err := ts.ForwardAuthSignInTarget(ctx, ts.project.ID, "https://app.example.com/page")
	ok(t, err)
	admin, err := ts.ForwardAuthSignInTarget(ctx, ts.project.ID, "https://app.example.com/admin/x")
	ok(t, err)
	_, pending := ts.signIn(addr) // the emailed code: the second factor waits
	if step, err := ts.ForwardAuthContinue(ctx, page, pending); err != nil || step != auth.OIDCStepSecondFactor {
		t.Fatalf("after the emailed code: step %v, %v", step, err)
	}
	if f, err := ts.ForwardAuthFactors(ctx, page, pending); err != nil || !f.TOTP || f.SMS || !f.Backup {
		t.Fatalf("factors offered %+v, %v; want TOTP and backup codes", f, err)
	}
	if f, err := ts.ForwardAuthFactors(ctx, admin, pending); err != nil || !f.TOTP || f.Backup {
		t.Fatalf("factors offered for an mfa rule %+v, %v; want TOTP only", f, err)
	}
	wantErr(t, ok2(ts.ForwardAuthBackupCode(ctx, admin, pending, codes[0], ts.meta)), auth.ErrStepUpRequired, "")

	wantErr(t, ok2(ts.ForwardAuthBackupCode(ctx, page, pending, "AAAAA-AAAAA", ts.meta)), auth.ErrInvalidCode, "")
	wantEvent(t, ts.lastEvent(), "backup_code", "verify", auth.CatInvalidCode, true)
	n := len(ts.outbox("session.created"))
	l, err := ts.ForwardAuthBackupCode(ctx, page, pending, codes[0], ts.meta)
	ok(t, err)
	wantEvent(t, ts.lastEvent(), "backup_code", "verify", "", true)
	created := ts.outbox("session.created")
	if len(created) != n+1 || created[n]["method"] != "forward-auth" || created[n]["session_id"] == pending.SessionID {
		t.Fatalf("session.created %v, want a new session of method forward-auth", created[n:])
	}
	if l.RefreshToken != "" {
		t.Error("the pages' backup-code sign-in made a refresh token")
	}
	signed := ts.principal(l)
	if step, err := ts.ForwardAuthContinue(ctx, page, signed); err != nil || step != auth.OIDCStepDone {
		t.Fatalf("after the backup code: step %v, %v; want done", step, err)
	}
	if step, err := ts.ForwardAuthContinue(ctx, admin, signed); err != nil || step != auth.OIDCStepSecondFactor {
		t.Fatalf("an mfa rule after the backup code: step %v, %v; want the second factor", step, err)
	}
	wantErr(t, ok2(ts.ForwardAuthBackupCode(ctx, page, pending, codes[0], ts.meta)), auth.ErrInvalidCode, auth.CatAlreadyUsed)
}

// ok2 drops a login, keeping the error.
func ok2(_ *auth.Login, err error) error { return err }

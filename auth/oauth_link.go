package auth

import (
	"errors"

	"latchkey/store"
)

// signInIdentity applies the linking rules to a proved identity inside
// tx: the user to sign in and whether it is new, or the refusal (an
// *Error, with the user it concerns when there is one).
//
//  1. The account linked to the provider account (issuer, subject) is
//     the one signed in, whatever address the provider gives now; the
//     address need not be verified, as it is not what finds the account.
//  2. Else the address must be verified (ErrEmailNotVerified). An
//     existing account of that address is signed in only when the
//     provider links by address (else ErrNotLinked: neither taken over
//     nor duplicated), and never one with a second factor
//     (ErrSignInWithEmailFirst); a new address is a new user. A
//     provider that links by address is trusted for it: its new user
//     is verified. One that does not is not: its new user is an
//     unverified account that registered itself, as a passkey sign-up
//     is, which a sign-in proving the address replaces (with its link
//     to the provider account: replaceUnverified), so that whoever
//     claimed an address at such a provider cannot hold it against its
//     owner.
//
// A disabled account is ErrUserDisabled. The first sign-in that passes
// links the provider account to its user.
func (s *Service) signInIdentity(tx store.Tx, p *store.Project, idn *oauthIdentity) (*store.User, bool, error) {
	linked, err := linkedUser(tx, p, idn)
	if err != nil {
		return nil, false, err
	}
	if linked != nil {
		if linked.Disabled {
			return linked, false, ErrUserDisabled
		}
		if has, err := hasFactors(tx, linked); err != nil {
			return nil, false, err
		} else if has {
			return linked, false, ErrSignInWithEmailFirst
		}
		return linked, false, nil
	}
	if !idn.EmailVerified {
		return nil, false, ErrEmailNotVerified
	}
	u, err := tx.UserByEmail(p.ID, idn.Email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	if err == nil {
		if !idn.LinkByEmail {
			return u, false, ErrNotLinked
		}
		if u.Disabled {
			return u, false, ErrUserDisabled
		}
		if changed, err := settleVerified(tx, u); err != nil {
			return nil, false, err
		} else if changed {
			if err := tx.PutUser(u); err != nil {
				return nil, false, err
			}
		}
		// An account the sign-in keeps (verified, or vouched for by
		// an import) is signed in to by email first when it has
		// factors.
		if replace, err := replaceable(tx, u); err != nil {
			return nil, false, err
		} else if !replace {
			has, err := hasFactors(tx, u)
			if err != nil {
				return nil, false, err
			}
			if has {
				return u, false, ErrSignInWithEmailFirst
			}
		}
	}
	// New, or an unverified account that registered itself (replaced
	// as a code sign-in replaces it), or one kept without factors. A
	// provider that does not link by address does not prove it (the
	// address has no account: an existing one was refused above): its
	// new user registered itself, unverified.
	var isNew bool
	if !idn.LinkByEmail {
		u, err = s.newUser(tx, p, idn.Email, false)
		isNew = err == nil
	} else {
		u, isNew, err = s.provenUser(tx, p, idn.Email)
	}
	if err != nil {
		return nil, false, err
	}
	if idn.Issuer != "" {
		err = tx.PutIdentity(&store.Identity{ProjectID: p.ID, Issuer: idn.Issuer, Subject: idn.Subject, UserID: u.ID,
			Provider: idn.Provider, CreatedAt: s.now().UTC()})
	}
	return u, isNew, err
}

// linkedUser returns the user of p linked to idn's provider account, or
// nil when there is none (no link, or one whose user is gone).
func linkedUser(tx store.Tx, p *store.Project, idn *oauthIdentity) (*store.User, error) {
	if idn.Issuer == "" {
		return nil, nil
	}
	link, err := tx.Identity(p.ID, idn.Issuer, idn.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	u, err := tx.User(link.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if u.ProjectID != p.ID {
		return nil, nil
	}
	return u, nil
}

// hasFactors reports whether u has an enrolled TOTP or SMS factor or a
// passkey.
func hasFactors(tx store.Tx, u *store.User) (bool, error) {
	for _, kind := range []string{"totp", "sms"} {
		f, err := tx.Factor(u.ID, kind)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return false, err
		}
		if f.EnrolledAt != nil {
			return true, nil
		}
	}
	pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
	return len(pks) > 0, err
}

package auth

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// VerifyFor is how long a verification link works.
const VerifyFor = 24 * time.Hour

// Signup signs a buyer up on org's storefront, as org's sign-up policy
// allows. Its answer and its work are the same whether or not the address
// has an account (so that nobody learns which addresses do, and cannot
// then lock known accounts out): the password is hashed, and one mail is
// written to the outbox in one transaction. A new address gets an
// unverified account and a verification link; the address of an account
// not yet verified gets a fresh link; the address of a verified account
// gets a notice that someone tried to sign up with it, and the account
// is left as it is.
func (a *Accounts) Signup(ctx context.Context, org store.Org, email, password string) error {
	switch org.SignupPolicy {
	case store.SignupClosed:
		return apperr.E(apperr.SignupClosed, "%s does not take new sign-ups", org.Name)
	case store.SignupInviteOnly:
		return apperr.E(apperr.SignupClosed, "%s takes sign-ups by invitation only", org.Name)
	}
	e, err := NormalizeEmail(email)
	if err != nil {
		return err
	}
	hash, err := a.hashPassword(ctx, password)
	if err != nil {
		return err
	}
	return a.store.InTx(ctx, func(tx pgx.Tx) error {
		u, created, err := a.store.SignupUser(ctx, tx, org.ID, e, "buyer", hash)
		if err != nil {
			return err
		}
		if created || !u.Verified {
			return a.sendVerification(ctx, tx, org, u)
		}
		return a.sendSignupExists(ctx, tx, org, u)
	})
}

// ResendVerification mails user of org a fresh verification link, unless
// their address is verified already (then it does nothing).
func (a *Accounts) ResendVerification(ctx context.Context, org store.Org, user uuid.UUID) error {
	u, err := a.store.UserByID(ctx, org.ID, user)
	if err != nil || u.Verified {
		return err
	}
	return a.store.InTx(ctx, func(tx pgx.Tx) error { return a.sendVerification(ctx, tx, org, u) })
}

// VerifyEmail spends a verification link's token and marks its user's
// address verified; NotFound for a token that is unknown, used or
// expired.
func (a *Accounts) VerifyEmail(ctx context.Context, token string) (store.TokenUser, error) {
	var t store.TokenUser
	err := a.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if t, err = a.tokens.Use(ctx, tx, store.TokenVerifyEmail, hashToken(token)); err != nil {
			return err
		}
		t.User.Verified = true
		return a.store.MarkVerified(ctx, tx, t.Org.ID, t.User.ID)
	})
	return t, err
}

// EmailVerified reports whether a user's address is verified.
func (a *Accounts) EmailVerified(ctx context.Context, org, user uuid.UUID) (bool, error) {
	return a.store.EmailVerified(ctx, org, user)
}

// SetSignupPolicy sets who may sign up on org's storefront.
func (a *Accounts) SetSignupPolicy(ctx context.Context, org uuid.UUID, policy string) error {
	switch policy {
	case store.SignupOpen, store.SignupInviteOnly, store.SignupClosed:
		return a.store.SetSignupPolicy(ctx, org, policy)
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "unknown sign-up policy",
		Fields: map[string]string{"signup_policy": "must be open, invite_only or closed"}}
}

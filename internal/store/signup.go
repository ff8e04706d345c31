package store

// The account updates of sign-up, email verification and password reset
// (their tokens are Tokens').

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// InTx runs fn in a transaction: a sign-up, a verification or a reset
// writes its rows and the mail they send together (internal/mail).
func (s *Accounts) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return inTx(ctx, s.db, fn)
}

// SignupUser inserts an unverified user of org through db, unless org has
// a user with that email already: then it inserts nothing and returns
// that user with created false. The email must be normalized.
func (s *Accounts) SignupUser(ctx context.Context, db pg.DBTX, org uuid.UUID, email, role, passwordHash string) (u User, created bool, err error) {
	u = User{OrgID: org, Email: email, Role: role, PasswordHash: passwordHash}
	err = db.QueryRow(ctx,
		`INSERT INTO users (org_id, email, role, password_hash) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (org_id, email) DO NOTHING RETURNING id`,
		org, email, role, passwordHash).Scan(&u.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		u, err = userByEmail(ctx, db, org, email)
		return u, false, err
	}
	if pg.IsInvalidInput(err) {
		return User{}, false, apperr.E(apperr.Invalid, "user is not valid")
	}
	return u, err == nil, err
}

// MarkVerified records that user proved they read mail at their address.
func (s *Accounts) MarkVerified(ctx context.Context, db pg.DBTX, org, user uuid.UUID) error {
	_, err := db.Exec(ctx, `UPDATE users SET email_verified_at = coalesce(email_verified_at, now())
		WHERE org_id = $1 AND id = $2`, org, user)
	return err
}

// EmailVerified reports whether user's email is verified.
func (s *Accounts) EmailVerified(ctx context.Context, org, user uuid.UUID) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT email_verified_at IS NOT NULL FROM users WHERE org_id = $1 AND id = $2`, org, user).Scan(&ok)
	return ok, notFoundIfNoRows(err, "user")
}

// ResetPassword gives user a new password hash through db, spends every
// other reset token of theirs, and deletes each of their sessions but
// keep's (the stored token of the request that reset it; "" keeps none),
// returning the deleted sessions' stored tokens. The deletes announce the
// ends to every process (migration 018).
func (s *Accounts) ResetPassword(ctx context.Context, db pg.DBTX, org, user uuid.UUID, passwordHash, keep string) ([]string, error) {
	if _, err := db.Exec(ctx, `UPDATE users SET password_hash = $3 WHERE org_id = $1 AND id = $2`, org, user, passwordHash); err != nil {
		return nil, err
	}
	if _, err := db.Exec(ctx, `UPDATE account_tokens SET used_at = now()
		WHERE org_id = $1 AND user_id = $2 AND purpose = $3 AND used_at IS NULL`, org, user, TokenPasswordReset); err != nil {
		return nil, err
	}
	return deleteSessions(ctx, db, `DELETE FROM sessions WHERE org_id = $1 AND user_id = $2 AND token <> $3 RETURNING token`,
		org, user, keep)
}

// SetSignupPolicy sets who may sign up on org's storefront.
func (s *Accounts) SetSignupPolicy(ctx context.Context, org uuid.UUID, policy string) error {
	tag, err := s.db.Exec(ctx, `UPDATE organizations SET signup_policy = $2 WHERE id = $1`, org, policy)
	if pg.IsInvalidInput(err) {
		return &apperr.Error{Code: apperr.Invalid, Message: "unknown sign-up policy",
			Fields: map[string]string{"signup_policy": "must be open, invite_only or closed"}}
	}
	if err == nil && tag.RowsAffected() == 0 {
		return apperr.E(apperr.NotFound, "organization not found")
	}
	return err
}

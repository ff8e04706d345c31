package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Account is what sign-in and the session checks need to know about a
// user beyond User: whether it is disabled.
type Account struct {
	User
	Disabled bool
}

// AccountByEmail finds a user of org by email, disabled or not.
func (s *Accounts) AccountByEmail(ctx context.Context, org uuid.UUID, email string) (Account, error) {
	a := Account{User: User{OrgID: org, Email: email}}
	err := s.db.QueryRow(ctx,
		`SELECT id, role, password_hash, disabled_at IS NOT NULL FROM users WHERE org_id = $1 AND email = $2`, org, email).
		Scan(&a.ID, &a.Role, &a.PasswordHash, &a.Disabled)
	return a, notFoundIfNoRows(err, "user")
}

// AccountByID finds a user of org by id, disabled or not.
func (s *Accounts) AccountByID(ctx context.Context, org, id uuid.UUID) (Account, error) {
	a := Account{User: User{OrgID: org, ID: id}}
	err := s.db.QueryRow(ctx,
		`SELECT email, role, password_hash, disabled_at IS NOT NULL FROM users WHERE org_id = $1 AND id = $2`, org, id).
		Scan(&a.Email, &a.Role, &a.PasswordHash, &a.Disabled)
	return a, notFoundIfNoRows(err, "user")
}

// UserChange is what DisableUser or SetUserRole did: the user as it is
// now and how many of its sessions were deleted.
type UserChange struct {
	User     User
	Sessions int64
}

// DisableUser disables a user of org found by email and deletes every
// session of that user, in one transaction. Disabling a disabled user
// changes nothing but still deletes sessions.
func (s *Accounts) DisableUser(ctx context.Context, org uuid.UUID, email string) (UserChange, error) {
	return s.changeUser(ctx, org, email,
		`UPDATE users SET disabled_at = coalesce(disabled_at, now()) WHERE org_id = $1 AND email = $2
		 RETURNING id, role`)
}

// SetUserRole gives a user of org found by email a new role and deletes
// every session of that user, in one transaction: a session carries the
// role it was signed in with, so ending it is the one way to make the new
// role count everywhere at once.
func (s *Accounts) SetUserRole(ctx context.Context, org uuid.UUID, email, role string) (UserChange, error) {
	return s.changeUser(ctx, org, email,
		`UPDATE users SET role = $3 WHERE org_id = $1 AND email = $2 RETURNING id, role`, role)
}

func (s *Accounts) changeUser(ctx context.Context, org uuid.UUID, email, update string, args ...any) (UserChange, error) {
	c := UserChange{User: User{OrgID: org, Email: email}}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, update, append([]any{org, email}, args...)...).Scan(&c.User.ID, &c.User.Role)
		if err != nil {
			return notFoundIfNoRows(err, "user")
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE org_id = $1 AND user_id = $2`, org, c.User.ID)
		if err != nil {
			return err
		}
		c.Sessions = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return UserChange{}, err
	}
	return c, nil
}

// SessionExpiry answers when the session stored under token (as scs
// stores it: hashed) expires, and false when it does not exist or has
// expired. Sessions are not tenant data: the token alone names one.
func (s *Accounts) SessionExpiry(ctx context.Context, token string) (time.Time, bool, error) {
	var expiry time.Time
	err := s.db.QueryRow(ctx, `SELECT expiry FROM sessions WHERE token = $1 AND expiry > now()`, token).Scan(&expiry)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return expiry, true, nil
}

package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// The purposes of an account token (migration 034).
const (
	TokenVerifyEmail   = "verify_email"
	TokenPasswordReset = "password_reset"
)

// Create stores the hash of a new token of user for purpose, valid
// for ttl, and returns its id. The user's expired tokens are deleted with
// it: they can do nothing more, and this keeps each user's rows few.
func (s *Tokens) Create(ctx context.Context, db pg.DBTX, org, user uuid.UUID, purpose string, hash []byte, ttl time.Duration) (uuid.UUID, error) {
	if _, err := db.Exec(ctx, `DELETE FROM account_tokens WHERE org_id = $1 AND user_id = $2 AND expires_at < now()`,
		org, user); err != nil {
		return uuid.Nil, err
	}
	var id uuid.UUID
	err := db.QueryRow(ctx,
		`INSERT INTO account_tokens (org_id, user_id, purpose, token_hash, expires_at)
		 VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING id`,
		org, user, purpose, hash, ttl.Seconds()).Scan(&id)
	return id, err
}

// TokenUser is whose a used token was.
type TokenUser struct {
	Org  Org
	User User
}

// Use marks the token of purpose with hash used, once: it returns
// the token's user and organization, or NotFound when no such token is
// live (unknown, used or expired — the caller cannot tell which, nor can
// whoever sent it).
func (s *Tokens) Use(ctx context.Context, db pg.DBTX, purpose string, hash []byte) (TokenUser, error) {
	var t TokenUser
	err := db.QueryRow(ctx, `
		WITH used AS (
			UPDATE account_tokens SET used_at = now()
			WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
			RETURNING org_id, user_id)
		SELECT o.id, o.slug, o.name, o.signup_policy, u.id, u.email, u.role, u.email_verified_at IS NOT NULL
		FROM used JOIN organizations o ON o.id = used.org_id
		JOIN users u ON u.org_id = used.org_id AND u.id = used.user_id
		WHERE u.disabled_at IS NULL`, hash, purpose).
		Scan(&t.Org.ID, &t.Org.Slug, &t.Org.Name, &t.Org.SignupPolicy, &t.User.ID, &t.User.Email, &t.User.Role, &t.User.Verified)
	if errors.Is(err, pgx.ErrNoRows) {
		return TokenUser{}, apperr.E(apperr.NotFound, "this link is not valid: it was used already, it expired, or it was mistyped")
	}
	t.User.OrgID = t.Org.ID
	return t, err
}

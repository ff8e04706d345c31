package store

// Invitations: the single-use links an organizer mails to let an address
// sign up under the invite_only policy (migration 043). They are Tokens'
// as the other mailed links are.

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// The states of an invitation.
const (
	InvitePending  = "pending"
	InviteAccepted = "accepted"
	InviteExpired  = "expired"
	InviteRevoked  = "revoked"
)

// Invitation is an invitation of an email address to an organization.
type Invitation struct {
	ID         uuid.UUID
	OrgID      uuid.UUID
	Email      string
	InvitedBy  uuid.UUID
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	RevokedAt  *time.Time
	Status     string
}

// inviteKeep is how long a finished invitation (accepted, revoked or
// expired) stays listed; a new invitation deletes the organization's
// older ones, so an invite-and-revoke loop cannot grow the table.
const inviteKeep = 30 * 24 * time.Hour

var quotaInvitations = quota{key: "invitations", what: "pending invitations", free: "revoke one or wait for one to be accepted or expire",
	count: `SELECT count(*) FROM invitations WHERE org_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`,
	limit: func(q Quotas) int { return q.Invitations }}

// invitationFrom selects an invitation's columns, with its state, from
// the relation that follows it.
const invitationFrom = `SELECT id, org_id, email, invited_by, created_at, expires_at, accepted_at, revoked_at,
	CASE WHEN accepted_at IS NOT NULL THEN 'accepted' WHEN revoked_at IS NOT NULL THEN 'revoked'
	     WHEN expires_at <= now() THEN 'expired' ELSE 'pending' END
	FROM `

func scanInvitation(r pgx.CollectableRow) (Invitation, error) {
	var i Invitation
	err := r.Scan(&i.ID, &i.OrgID, &i.Email, &i.InvitedBy, &i.CreatedAt, &i.ExpiresAt, &i.AcceptedAt, &i.RevokedAt, &i.Status)
	return i, err
}

// CreateInvitation stores, in tx, an invitation of email (normalized) to
// org by the user by, with the hash of its link's token, valid for ttl. A
// pending invitation of the same address is revoked by it (one link
// works per address), and past the organization's quota of pending
// invitations it is refused (409).
func (s *Tokens) CreateInvitation(ctx context.Context, tx pgx.Tx, org, by uuid.UUID, email string, hash []byte, ttl time.Duration) (Invitation, error) {
	if _, err := tx.Exec(ctx, `DELETE FROM invitations WHERE org_id = $1
		AND greatest(coalesce(accepted_at, revoked_at, expires_at), expires_at) < now() - make_interval(secs => $2)`,
		org, inviteKeep.Seconds()); err != nil {
		return Invitation{}, err
	}
	if _, err := tx.Exec(ctx, `UPDATE invitations SET revoked_at = now()
		WHERE org_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`,
		org, email); err != nil {
		return Invitation{}, err
	}
	rows, err := tx.Query(ctx, `WITH ins AS (
			INSERT INTO invitations (org_id, email, invited_by, token_hash, expires_at)
			VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING *)
		`+invitationFrom+`ins`, org, email, by, hash, ttl.Seconds())
	if err != nil {
		return Invitation{}, err
	}
	inv, err := pgx.CollectExactlyOneRow(rows, scanInvitation)
	if pg.IsInvalidInput(err) {
		return Invitation{}, &apperr.Error{Code: apperr.Invalid, Message: "enter a valid email address",
			Fields: map[string]string{"email": "is not a valid email address"}}
	}
	if err != nil {
		return Invitation{}, err
	}
	return inv, s.checkQuota(ctx, tx, org, quotaInvitations)
}

// Invitations lists org's invitations, newest first.
func (s *Tokens) Invitations(ctx context.Context, org uuid.UUID) ([]Invitation, error) {
	rows, err := s.db.Query(ctx, invitationFrom+`invitations WHERE org_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1000`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanInvitation)
}

// RevokeInvitation revokes a pending invitation of org: its link works no
// more. NotFound for an invitation org does not have; Conflict for one
// accepted already (revoking an expired or revoked one changes nothing).
func (s *Tokens) RevokeInvitation(ctx context.Context, org, id uuid.UUID) error {
	var accepted bool
	err := s.db.QueryRow(ctx, `UPDATE invitations SET revoked_at = coalesce(revoked_at, now())
		WHERE org_id = $1 AND id = $2 AND accepted_at IS NULL RETURNING false`, org, id).Scan(&accepted)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := s.db.QueryRow(ctx, `SELECT true FROM invitations WHERE org_id = $1 AND id = $2`, org, id).Scan(&accepted); err != nil {
			return notFoundIfNoRows(err, "invitation")
		}
		return apperr.E(apperr.Conflict, "this invitation was accepted already")
	}
	return err
}

// InvitationByToken reads the pending invitation whose token has hash,
// with its organization, without spending it (the page the link opens
// names both); NotFound when no such invitation is pending.
func (s *Tokens) InvitationByToken(ctx context.Context, hash []byte) (Invitation, Org, error) {
	return invitationByToken(ctx, s.db, hash, false)
}

// UseInvitation marks the pending invitation whose token has hash
// accepted, once, in tx, and returns it with its organization; NotFound
// when no such invitation is pending (unknown, accepted, revoked or
// expired — the caller cannot tell which).
func (s *Tokens) UseInvitation(ctx context.Context, tx pgx.Tx, hash []byte) (Invitation, Org, error) {
	return invitationByToken(ctx, tx, hash, true)
}

func invitationByToken(ctx context.Context, db pg.DBTX, hash []byte, use bool) (Invitation, Org, error) {
	q := `WITH i AS (SELECT * FROM invitations
			WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()) `
	if use {
		q = `WITH i AS (UPDATE invitations SET accepted_at = now()
			WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now() RETURNING *) `
	}
	var i Invitation
	var o Org
	err := db.QueryRow(ctx, q+`
		SELECT i.id, i.org_id, i.email, i.invited_by, i.created_at, i.expires_at, i.accepted_at, o.slug, o.name, o.signup_policy
		FROM i JOIN organizations o ON o.id = i.org_id`, hash).
		Scan(&i.ID, &i.OrgID, &i.Email, &i.InvitedBy, &i.CreatedAt, &i.ExpiresAt, &i.AcceptedAt, &o.Slug, &o.Name, &o.SignupPolicy)
	if errors.Is(err, pgx.ErrNoRows) {
		return Invitation{}, Org{}, apperr.E(apperr.NotFound,
			"this invitation is not valid: it was used already, it expired, it was withdrawn, or it was mistyped")
	}
	o.ID, i.Status = i.OrgID, InvitePending
	if use {
		i.Status = InviteAccepted
	}
	return i, o, err
}

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// APIKey is an API key as listed: never its secret.
type APIKey struct {
	ID         uuid.UUID
	OrgID      uuid.UUID
	Name       string
	Role       string
	CreatedBy  uuid.UUID
	Hint       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// CreateAPIKey stores a key of org by the hash of its secret, unless org
// has its quota of keys not revoked (409 conflict, Quotas.APIKeys).
func (s *Accounts) CreateAPIKey(ctx context.Context, org, by uuid.UUID, name, role string, hash []byte, hint string) (APIKey, error) {
	k := APIKey{OrgID: org, Name: name, Role: role, CreatedBy: by, Hint: hint}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `
			INSERT INTO api_keys (org_id, name, role, created_by, hash, hint) VALUES ($1, $2, $3, $4, $5, $6)
			RETURNING id, created_at`, org, name, role, by, hash, hint).Scan(&k.ID, &k.CreatedAt); err != nil {
			return err
		}
		return s.checkQuota(ctx, tx, org, quotaAPIKeys)
	})
	if err != nil {
		return APIKey{}, err
	}
	return k, nil
}

// APIKeys lists an organization's keys, revoked ones included, newest first.
func (s *Accounts) APIKeys(ctx context.Context, org uuid.UUID) ([]APIKey, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, org_id, name, role, created_by, hint, created_at, last_used_at, revoked_at
		FROM api_keys WHERE org_id = $1 ORDER BY created_at DESC, id`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanAPIKey)
}

func scanAPIKey(r pgx.CollectableRow) (APIKey, error) {
	var k APIKey
	err := r.Scan(&k.ID, &k.OrgID, &k.Name, &k.Role, &k.CreatedBy, &k.Hint, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt)
	return k, err
}

// APIKeyByHash finds the live key whose secret hashes to hash: not
// revoked, and its creator still an enabled organizer (a key must not
// outlive the account, or the role, that made it). ErrNotFound otherwise.
func (s *Accounts) APIKeyByHash(ctx context.Context, hash []byte) (APIKey, error) {
	rows, err := s.db.Query(ctx, `
		SELECT k.id, k.org_id, k.name, k.role, k.created_by, k.hint, k.created_at, k.last_used_at, k.revoked_at
		FROM api_keys k JOIN users u ON u.org_id = k.org_id AND u.id = k.created_by
		WHERE k.hash = $1 AND k.revoked_at IS NULL AND u.disabled_at IS NULL AND u.role = 'organizer'`, hash)
	if err != nil {
		return APIKey{}, err
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanAPIKey)
	return k, notFoundIfNoRows(err, "API key")
}

// RevokeAPIKey revokes a key of org; revoking a revoked key is not an
// error. ErrNotFound for another organization's key.
func (s *Accounts) RevokeAPIKey(ctx context.Context, org, id uuid.UUID) (APIKey, error) {
	rows, err := s.db.Query(ctx, `
		UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE org_id = $1 AND id = $2
		RETURNING id, org_id, name, role, created_by, hint, created_at, last_used_at, revoked_at`, org, id)
	if err != nil {
		return APIKey{}, err
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanAPIKey)
	return k, notFoundIfNoRows(err, "API key")
}

// TouchAPIKey records that a key of org was used at at.
func (s *Accounts) TouchAPIKey(ctx context.Context, org, id uuid.UUID, at time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE api_keys SET last_used_at = greatest(last_used_at, $3) WHERE org_id = $1 AND id = $2`,
		org, id, at)
	return err
}

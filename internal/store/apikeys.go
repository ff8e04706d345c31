package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
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
	// Scopes are the kinds of request the key may make (auth.Scope*).
	Scopes []string
	// ExpiresAt is when the key stops working (nil: never).
	ExpiresAt *time.Time
	// CreatedByKey is the key that made this one (nil: a signed-in
	// organizer did); revoking it revokes this one.
	CreatedByKey *uuid.UUID
}

// NewAPIKey is a key to store: only the hash of its secret and the hint.
type NewAPIKey struct {
	Name         string
	Role         string
	Scopes       []string
	ExpiresAt    *time.Time
	CreatedByKey *uuid.UUID
	Hash         []byte
	Hint         string
}

const apiKeyColumns = `id, org_id, name, role, created_by, hint, created_at, last_used_at, revoked_at, scopes, expires_at, created_by_key` // #nosec G101 -- column names, not a credential

// CreateAPIKey stores a key of org made by user by, unless org has its
// quota of keys not revoked (409 conflict, Quotas.APIKeys). A key made by
// a key (k.CreatedByKey) is refused when that key is revoked or expired
// by the time it commits: the maker's row is locked until then, so a
// revocation either comes first and is seen, or comes after and revokes
// the new key with its maker.
func (s *Accounts) CreateAPIKey(ctx context.Context, org, by uuid.UUID, n NewAPIKey) (APIKey, error) {
	k := APIKey{OrgID: org, Name: n.Name, Role: n.Role, CreatedBy: by, Hint: n.Hint, Scopes: n.Scopes,
		ExpiresAt: n.ExpiresAt, CreatedByKey: n.CreatedByKey}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		if err := liveMaker(ctx, tx, org, n.CreatedByKey); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO api_keys (org_id, name, role, created_by, hash, hint, scopes, expires_at, created_by_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			RETURNING id, created_at`, org, n.Name, n.Role, by, n.Hash, n.Hint, n.Scopes, n.ExpiresAt, n.CreatedByKey).
			Scan(&k.ID, &k.CreatedAt); err != nil {
			return err
		}
		return s.checkQuota(ctx, tx, org, quotaAPIKeys)
	})
	if err != nil {
		return APIKey{}, err
	}
	return k, nil
}

// errMakerGone refuses what a key makes once the key is revoked or
// expired: the key is not valid, as its request would be now.
var errMakerGone = apperr.E(apperr.Unauthorized, "the API key is not valid")

// liveMaker locks the row of the key making something (key nil: a
// session is) until the transaction ends, and refuses a revoked or
// expired one (see CreateAPIKey).
func liveMaker(ctx context.Context, tx pgx.Tx, org uuid.UUID, key *uuid.UUID) error {
	if key == nil {
		return nil
	}
	var live bool
	err := tx.QueryRow(ctx, `
		SELECT revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
		FROM api_keys WHERE org_id = $1 AND id = $2 FOR SHARE`, org, *key).Scan(&live)
	if err == pgx.ErrNoRows || (err == nil && !live) {
		return errMakerGone
	}
	return err
}

// APIKeys lists an organization's keys, revoked ones included, newest first.
func (s *Accounts) APIKeys(ctx context.Context, org uuid.UUID) ([]APIKey, error) {
	rows, err := s.db.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE org_id = $1 ORDER BY created_at DESC, id`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanAPIKey)
}

func scanAPIKey(r pgx.CollectableRow) (APIKey, error) {
	var k APIKey
	err := r.Scan(&k.ID, &k.OrgID, &k.Name, &k.Role, &k.CreatedBy, &k.Hint, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt,
		&k.Scopes, &k.ExpiresAt, &k.CreatedByKey)
	return k, err
}

// APIKeyByHash finds the live key whose secret hashes to hash: not
// revoked, not expired, and its creator still an enabled organizer (a key
// must not outlive the account, or the role, that made it). ErrNotFound
// otherwise.
func (s *Accounts) APIKeyByHash(ctx context.Context, hash []byte) (APIKey, error) {
	rows, err := s.db.Query(ctx, `
		SELECT k.id, k.org_id, k.name, k.role, k.created_by, k.hint, k.created_at, k.last_used_at, k.revoked_at,
		       k.scopes, k.expires_at, k.created_by_key
		FROM api_keys k JOIN users u ON u.org_id = k.org_id AND u.id = k.created_by
		WHERE k.hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
		  AND u.disabled_at IS NULL AND u.role = 'organizer'`, hash)
	if err != nil {
		return APIKey{}, err
	}
	k, err := pgx.CollectExactlyOneRow(rows, scanAPIKey)
	return k, notFoundIfNoRows(err, "API key")
}

// RevokeAPIKey revokes a key of org, with every key it made (and those
// made by them, and so on) and the webhook endpoints any of them
// registered, in one transaction; revoking a revoked key is not an error
// (what it made is revoked again if a maker raced it). ErrNotFound for
// another organization's key.
//
// Each generation is revoked by a statement of its own: a key being made
// by one of them holds its maker's row (CreateAPIKey), so the statement
// that revokes the maker waits for it, and the next statement, with a
// new snapshot, sees the new key.
func (s *Accounts) RevokeAPIKey(ctx context.Context, org, id uuid.UUID) (APIKey, error) {
	var k APIKey
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE org_id = $1 AND id = $2
			RETURNING `+apiKeyColumns, org, id)
		if err != nil {
			return err
		}
		if k, err = pgx.CollectExactlyOneRow(rows, scanAPIKey); err != nil {
			return notFoundIfNoRows(err, "API key")
		}
		all, level := []uuid.UUID{id}, []uuid.UUID{id}
		for len(level) > 0 {
			rows, err := tx.Query(ctx, `
				UPDATE api_keys SET revoked_at = now()
				WHERE org_id = $1 AND created_by_key = ANY ($2) AND revoked_at IS NULL RETURNING id`, org, level)
			if err != nil {
				return err
			}
			if level, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
				return err
			}
			all = append(all, level...)
		}
		return deleteEndpointsOf(ctx, tx, org, all)
	})
	if err != nil {
		return APIKey{}, err
	}
	return k, nil
}

// TouchAPIKey records that a key of org was used at at.
func (s *Accounts) TouchAPIKey(ctx context.Context, org, id uuid.UUID, at time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE api_keys SET last_used_at = greatest(last_used_at, $3) WHERE org_id = $1 AND id = $2`,
		org, id, at)
	return err
}

package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// HoldKey names a keyed hold request: the buyer's Idempotency-Key and a
// fingerprint of what was asked, so the key cannot be reused for another
// request.
type HoldKey struct {
	Org, User, Event uuid.UUID
	Key, Hash        string
}

// HoldClaim is what claiming a key found.
type HoldClaim struct {
	// Mine: this request holds the key and must make the holds, then
	// FinishHoldRequest (or DropHoldRequest when it holds nothing).
	Mine bool
	// HoldIDs are the holds the first request made (Done).
	HoldIDs []uuid.UUID
	Done    bool
}

// ClaimHoldRequest claims a hold request's key, or says what became of
// the request that claimed it first: done (its holds), or still running.
// A claim left unfinished for longer than stale (its process died
// mid-request) is taken over. A key used with another request is refused
// (idempotency_mismatch).
func (s *Store) ClaimHoldRequest(ctx context.Context, k HoldKey, stale time.Duration) (HoldClaim, error) {
	var c HoldClaim
	err := s.db.QueryRow(ctx, `
		INSERT INTO hold_requests AS h (org_id, user_id, idempotency_key, event_id, request_hash) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (org_id, user_id, idempotency_key) DO UPDATE SET claimed_at = now()
		WHERE h.hold_ids IS NULL AND h.request_hash = excluded.request_hash AND h.claimed_at < now() - $6::interval
		RETURNING true`, k.Org, k.User, k.Key, k.Event, k.Hash, stale).Scan(&c.Mine)
	if !errors.Is(err, pgx.ErrNoRows) {
		return c, err
	}
	var hash string
	err = s.db.QueryRow(ctx, `
		SELECT request_hash, hold_ids FROM hold_requests WHERE org_id = $1 AND user_id = $2 AND idempotency_key = $3`,
		k.Org, k.User, k.Key).Scan(&hash, &c.HoldIDs)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Dropped by its request meanwhile: the caller claims again.
		return HoldClaim{}, nil
	case err != nil:
		return HoldClaim{}, err
	case hash != k.Hash:
		return HoldClaim{}, apperr.E(apperr.IdempotencyMismatch, "this Idempotency-Key was used for a different hold request")
	}
	c.Done = c.HoldIDs != nil
	return c, nil
}

// FinishHoldRequest records the holds a claimed request made.
func (s *Store) FinishHoldRequest(ctx context.Context, k HoldKey, holdIDs []uuid.UUID) error {
	_, err := s.db.Exec(ctx, `
		UPDATE hold_requests SET hold_ids = $4 WHERE org_id = $1 AND user_id = $2 AND idempotency_key = $3`,
		k.Org, k.User, k.Key, holdIDs)
	return err
}

// DropHoldRequest frees the key of a claimed request that held nothing.
func (s *Store) DropHoldRequest(ctx context.Context, k HoldKey) error {
	_, err := s.db.Exec(ctx, `
		DELETE FROM hold_requests WHERE org_id = $1 AND user_id = $2 AND idempotency_key = $3 AND hold_ids IS NULL`,
		k.Org, k.User, k.Key)
	return err
}

// PruneHoldRequests deletes up to limit keyed hold requests claimed
// before before and reports how many went: a repeat of one is then a new
// request. A claim still running that long ago has a dead process.
func (s *Store) PruneHoldRequests(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.db.Exec(ctx, `
		DELETE FROM hold_requests WHERE (org_id, user_id, idempotency_key) IN (
		    SELECT org_id, user_id, idempotency_key FROM hold_requests WHERE claimed_at < $1 ORDER BY claimed_at LIMIT $2)`,
		before, limit)
	return tag.RowsAffected(), err
}

// HoldsByID returns holds of org by id, whatever their status, in the
// order of ids (a missing one is left out).
func (s *Store) HoldsByID(ctx context.Context, org uuid.UUID, ids []uuid.UUID) ([]Hold, error) {
	rows, err := s.db.Query(ctx, holdColumns+` WHERE org_id = $1 AND id = ANY($2::uuid[]) ORDER BY array_position($2::uuid[], id)`,
		org, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanHold)
}

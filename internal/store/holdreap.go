package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Expired is a hold the reaper ended.
type Expired struct {
	Hold
}

// ReapExpired expires up to limit active holds whose time has passed and
// frees their seats. SKIP LOCKED lets every process run it at once: each
// claims a disjoint batch, and a hold being purchased right now is skipped
// (the purchase decides its fate).
func (s *Holds) ReapExpired(ctx context.Context, limit int) ([]Hold, error) {
	rows, err := s.db.Query(ctx, `
		WITH exp AS (
		    UPDATE seat_holds h SET status = 'expired', ended_at = now()
		    WHERE h.status = 'active' AND (h.org_id, h.id) IN (
		        SELECT org_id, id FROM seat_holds WHERE status = 'active' AND held_until < now()
		        ORDER BY held_until LIMIT $1 FOR UPDATE SKIP LOCKED)
		    RETURNING h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence, h.source
		), st AS (
		    UPDATE seats SET status = 'available', hold_id = NULL, version = version + 1, updated_at = now()
		    FROM exp WHERE seats.org_id = exp.org_id AND seats.id = exp.seat_id AND seats.hold_id = exp.id
		    RETURNING seats.id, seats.version, seats.idx
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, action, entity, entity_id, seat_id, data)
		    SELECT org_id, event_id, 'hold.expired', 'seat_hold', id, seat_id, jsonb_build_object('held_until', held_until, 'holder', user_id)
		    FROM exp
		)
		SELECT exp.id, exp.org_id, exp.event_id, exp.seat_id, exp.user_id, exp.status, exp.held_until, exp.created_at,
		       exp.extensions, exp.fence, exp.source, st.version, st.idx
		FROM exp JOIN st ON st.id = exp.seat_id`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hold, error) {
		var h Hold
		err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
			&h.Extensions, &h.Fence, &h.Source, &h.SeatVersion, &h.SeatIdx)
		h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
		return h, err
	})
}

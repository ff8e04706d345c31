package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// SetBlocked blocks an available seat (blocked=true) or unblocks a blocked
// one, returning the seat's new version.
func (s *Holds) SetBlocked(ctx context.Context, org, event, seat, actor uuid.UUID, blocked bool, reason string) (int64, error) {
	from, to, action := Available, Blocked, "seat.blocked"
	if !blocked {
		from, to, action = Blocked, Available, "seat.unblocked"
	}
	var version int64
	err := s.db.QueryRow(ctx, `
		WITH st AS (
		    UPDATE seats SET status = $5, version = version + 1, updated_at = now()
		    WHERE org_id = $1 AND event_id = $2 AND id = $3 AND status = $4
		    RETURNING id, version
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		    SELECT $1, $2, $6, $7, 'seat', id, id, jsonb_build_object('reason', $8::text) FROM st
		)
		SELECT version FROM st`, org, event, seat, from, to, actor, action, reason).Scan(&version)
	if !errors.Is(err, pgx.ErrNoRows) {
		return version, err
	}
	var status string
	err = s.db.QueryRow(ctx, `SELECT status FROM seats WHERE org_id = $1 AND event_id = $2 AND id = $3`,
		org, event, seat).Scan(&status)
	if err != nil {
		return 0, notFoundIfNoRows(err, "seat")
	}
	return 0, &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("seat is %s, not %s", status, from),
		Seats: []string{seat.String()}}
}

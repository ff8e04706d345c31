package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// Release ends an active hold. Only its holder may release it, unless
// staff is set (box office and organizers of the same org); a holder may
// not while a payment of theirs covers it (the payment may still succeed,
// and would then sell the seat).
func (s *Holds) Release(ctx context.Context, org, holdID, actor uuid.UUID, staff bool, reason string) (Hold, error) {
	rows, err := s.db.Query(ctx, `
		WITH h AS (
		    UPDATE seat_holds SET status = 'released', ended_at = now(), released_by = $3, release_reason = NULLIF($5, '')
		    WHERE org_id = $1 AND id = $2 AND status = 'active' AND ($4 OR (user_id = $3 AND payment_id IS NULL))
		    RETURNING id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source
		), st AS (
		    UPDATE seats SET status = 'available', hold_id = NULL, version = version + 1, updated_at = now()
		    FROM h WHERE seats.org_id = $1 AND seats.id = h.seat_id AND seats.hold_id = h.id
		    RETURNING seats.id, seats.version
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		    SELECT $1, h.event_id, $3, 'hold.released', 'seat_hold', h.id, h.seat_id,
		           jsonb_build_object('reason', $5::text, 'by_staff', $4::boolean, 'holder', h.user_id)
		    FROM h
		)
		SELECT h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence, h.source, st.version
		FROM h JOIN st ON st.id = h.seat_id`, org, holdID, actor, staff, reason)
	if err != nil {
		return Hold{}, err
	}
	h, err := pgx.CollectExactlyOneRow(rows, scanChangedHold)
	if !errors.Is(err, pgx.ErrNoRows) {
		return h, err
	}
	// Nothing changed: say why without telling another tenant anything.
	cur, err := s.ByID(ctx, org, holdID)
	switch {
	case err != nil:
		return Hold{}, err
	case !staff && cur.UserID != actor:
		return Hold{}, apperr.E(apperr.Forbidden, "only the holder or box-office staff can release this hold")
	case !staff && cur.Status == HoldActive && cur.PaymentID != uuid.Nil:
		return Hold{}, apperr.E(apperr.Conflict, "this seat is being paid for: cancel the payment to release it")
	default:
		return Hold{}, apperr.E(apperr.NotFound, "hold is no longer active (it was %s)", cur.Status)
	}
}

// Extend adds by to every active, unexpired hold of the user for the event
// that has been extended fewer than maxExt times, and returns all the user's
// active holds with the changed ones marked by a non-zero SeatVersion.
func (s *Holds) Extend(ctx context.Context, org, event, user uuid.UUID, by time.Duration, maxExt int) (changed, all []Hold, err error) {
	err = inTx(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH h AS (
			    UPDATE seat_holds SET held_until = held_until + $4::interval, extensions = extensions + 1
			    WHERE org_id = $1 AND event_id = $2 AND user_id = $3 AND status = 'active'
			      AND held_until > now() AND extensions < $5
			    RETURNING id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source
			), st AS (
			    UPDATE seats SET version = version + 1, updated_at = now()
			    FROM h WHERE seats.org_id = $1 AND seats.id = h.seat_id AND seats.hold_id = h.id
			    RETURNING seats.id, seats.version
			), a AS (
			    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
			    SELECT $1, $2, $3, 'hold.extended', 'seat_hold', h.id, h.seat_id, jsonb_build_object('held_until', h.held_until)
			    FROM h
			)
			SELECT h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence, h.source, st.version
			FROM h JOIN st ON st.id = h.seat_id ORDER BY h.seat_id`, org, event, user, by, maxExt)
		if err != nil {
			return err
		}
		changed, err = pgx.CollectRows(rows, scanChangedHold)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	all, err = s.OfUser(ctx, org, event, user)
	return changed, all, err
}

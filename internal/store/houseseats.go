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

// HouseAllocation is a named set of blocked seats kept back from sale
// ("Sponsor", "Press") until staff release them, all at once.
type HouseAllocation struct {
	ID         uuid.UUID
	EventID    uuid.UUID
	Name       string
	CreatedAt  time.Time
	ReleasedAt time.Time // zero while held back
	SeatIDs    []uuid.UUID
	Seats      []string // labels, in map order
}

// Released reports whether the allocation went on sale.
func (a HouseAllocation) Released() bool { return !a.ReleasedAt.IsZero() }

// CreateHouseSeats makes an allocation of blocked seats of an event. Every
// seat must be blocked and in no other allocation still held back.
func (s *Bookings) CreateHouseSeats(ctx context.Context, org, event, actor uuid.UUID, name string, seatIDs []uuid.UUID) (HouseAllocation, error) {
	var id uuid.UUID
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id, status FROM seats WHERE org_id = $1 AND event_id = $2 AND id = ANY($3::uuid[])
			ORDER BY id FOR UPDATE`, org, event, seatIDs)
		if err != nil {
			return err
		}
		var notBlocked []string
		n := 0
		var seat uuid.UUID
		var status SeatStatus
		if _, err := pgx.ForEachRow(rows, []any{&seat, &status}, func() error {
			n++
			if status != Blocked {
				notBlocked = append(notBlocked, seat.String())
			}
			return nil
		}); err != nil {
			return err
		}
		switch {
		case n != len(seatIDs):
			return apperr.E(apperr.NotFound, "seat not found in this event")
		case len(notBlocked) > 0:
			return &apperr.Error{Code: apperr.Conflict, Message: "house seats are made of blocked seats; block them first",
				Seats: notBlocked}
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO house_allocations (org_id, event_id, name, created_by) VALUES ($1, $2, $3, $4) RETURNING id`,
			org, event, name, actor).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO house_allocation_seats (allocation_id, org_id, event_id, seat_id)
			SELECT $3, $1, $2, unnest($4::uuid[])`, org, event, id, seatIDs); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			VALUES ($1, $2, $3, 'house.created', 'house_allocation', $4, jsonb_build_object('name', $5::text, 'seats', $6::int))`,
			org, event, actor, id, name, len(seatIDs))
		return err
	})
	if pg.IsUniqueViolationOf(err, "house_allocation_seats_live") {
		return HouseAllocation{}, apperr.E(apperr.Conflict, "a seat is already in house seats not yet released")
	}
	if err != nil {
		return HouseAllocation{}, err
	}
	return s.HouseAllocation(ctx, org, id)
}

const houseColumns = `
	SELECT a.id, a.event_id, a.name, a.created_at, coalesce(a.released_at, 'epoch'::timestamptz),
	       array_agg(s.id ORDER BY sec.position, s.idx),
	       array_agg(sec.label || '-' || s.row_label || '-' || s.number ORDER BY sec.position, s.idx)
	FROM house_allocations a
	JOIN house_allocation_seats hs ON hs.allocation_id = a.id AND hs.org_id = a.org_id
	JOIN seats s ON s.id = hs.seat_id AND s.org_id = hs.org_id
	JOIN sections sec ON sec.id = s.section_id AND sec.org_id = s.org_id`

func scanHouse(r pgx.CollectableRow) (HouseAllocation, error) {
	var a HouseAllocation
	err := r.Scan(&a.ID, &a.EventID, &a.Name, &a.CreatedAt, &a.ReleasedAt, &a.SeatIDs, &a.Seats)
	a.CreatedAt = a.CreatedAt.UTC()
	if a.ReleasedAt.Unix() == 0 {
		a.ReleasedAt = time.Time{}
	}
	a.ReleasedAt = a.ReleasedAt.UTC()
	return a, err
}

// HouseAllocation returns one allocation of org.
func (s *Bookings) HouseAllocation(ctx context.Context, org, id uuid.UUID) (HouseAllocation, error) {
	rows, err := s.db.Query(ctx, houseColumns+` WHERE a.org_id = $1 AND a.id = $2 GROUP BY a.org_id, a.id`, org, id)
	if err != nil {
		return HouseAllocation{}, err
	}
	a, err := pgx.CollectExactlyOneRow(rows, scanHouse)
	return a, notFoundIfNoRows(err, "house seats")
}

// HouseSeats lists an event's allocations, those held back first.
func (s *Bookings) HouseSeats(ctx context.Context, org, event uuid.UUID) ([]HouseAllocation, error) {
	rows, err := s.db.Query(ctx, houseColumns+` WHERE a.org_id = $1 AND a.event_id = $2 GROUP BY a.org_id, a.id
		ORDER BY a.released_at IS NOT NULL, a.created_at DESC`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanHouse)
}

// ReleaseHouseSeats puts an allocation on sale: every seat of it still
// blocked becomes available, in one transaction, each with the
// seat.unblocked audit row the change feed carries. It returns the
// allocation and the seats it freed with their new versions.
func (s *Bookings) ReleaseHouseSeats(ctx context.Context, org, id, actor uuid.UUID) (HouseAllocation, []SoldSeat, error) {
	var freed []SoldSeat
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var name string
		var released *time.Time
		err := tx.QueryRow(ctx, `SELECT name, released_at FROM house_allocations WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			org, id).Scan(&name, &released)
		if err != nil {
			return notFoundIfNoRows(err, "house seats")
		}
		if released != nil {
			return apperr.E(apperr.Conflict, "these house seats were released already")
		}
		rows, err := tx.Query(ctx, `
			WITH hs AS (
			    UPDATE house_allocation_seats SET live = false WHERE org_id = $1 AND allocation_id = $2 RETURNING seat_id
			), st AS (
			    UPDATE seats SET status = 'available', version = version + 1, updated_at = now()
			    FROM hs WHERE seats.org_id = $1 AND seats.id = hs.seat_id AND seats.status = 'blocked'
			    RETURNING seats.id, seats.event_id, seats.version
			), a AS (
			    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
			    SELECT $1, st.event_id, $3, 'seat.unblocked', 'seat', st.id, st.id,
			           jsonb_build_object('reason', 'house seats released: ' || $4::text, 'house_allocation', $2::uuid)
			    FROM st
			)
			SELECT id, version FROM st ORDER BY id`, org, id, actor, name)
		if err != nil {
			return err
		}
		freed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SoldSeat, error) {
			var x SoldSeat
			err := r.Scan(&x.SeatID, &x.Version)
			return x, err
		})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE house_allocations SET released_at = now(), released_by = $3 WHERE org_id = $1 AND id = $2`,
			org, id, actor)
		return err
	})
	if err != nil {
		return HouseAllocation{}, nil, err
	}
	a, err := s.HouseAllocation(ctx, org, id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = apperr.E(apperr.NotFound, "house seats not found")
	}
	return a, freed, err
}

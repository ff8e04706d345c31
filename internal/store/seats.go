package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SeatStatus is a seat's state, as stored in seats.status. pgx scans and
// encodes it as text; JSON shows the plain string.
type SeatStatus string

// Seat statuses.
const (
	Available SeatStatus = "available"
	Held      SeatStatus = "held"
	Sold      SeatStatus = "sold"
	Blocked   SeatStatus = "blocked"
)

// Seat is a seat with its current state and, when held, its active hold.
type Seat struct {
	ID        uuid.UUID
	SectionID uuid.UUID
	Row       string
	Number    int
	Idx       int
	X, Y      int
	Status    SeatStatus
	Version   int64
	Fence     int64
	HoldID    uuid.UUID // zero unless held
	HolderID  uuid.UUID // zero unless held
	HeldUntil time.Time // zero unless held
	// Category is the seat's price category key ("" for none).
	Category   string
	Accessible bool
	Companion  bool
}

// seatColumns selects seats (s) with their active hold, as scanSeat reads them.
const seatColumns = `
		SELECT s.id, s.section_id, s.row_label, s.number, s.idx, s.x, s.y, s.status, s.version, s.fence,
		       h.id, h.user_id, h.held_until, coalesce(s.category, ''), s.accessible, s.companion
		FROM seats s LEFT JOIN LATERAL (` + seatHoldSQL + `) h ON h.status = 'active'`

// seatHoldSQL is the hold seat s names, for a LEFT JOIN LATERAL whose ON
// keeps it only while active: one probe of seat_holds' primary key per
// seat, whatever the statistics say. Statistics from before a sale say
// there are almost no active holds, and the planner believed them: as a
// plain join it compared every seat with every active hold of the
// organization (9.4 s for an event of 4 000 seats at 38 000 active holds),
// and with the status filter inside it walked the whole partial index of
// active holds for every seat. Here no partial index applies, and the
// LIMIT (a hold id names one hold) keeps the subquery from being
// flattened back into a join the planner may plan either way.
const seatHoldSQL = `
		SELECT h.id, h.user_id, h.held_until, h.status FROM seat_holds h
		WHERE h.org_id = s.org_id AND h.id = s.hold_id LIMIT 1`

// Seats loads every seat of an event with its current hold, in idx
// order.
func (s *Events) Seats(ctx context.Context, org, event uuid.UUID) ([]Seat, error) {
	rows, err := s.db.Query(ctx, seatColumns+`
		WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSeat)
}

// SeatsByID returns the listed seats of an event in idx order.
func (s *Events) SeatsByID(ctx context.Context, org, event uuid.UUID, ids []uuid.UUID) ([]Seat, error) {
	rows, err := s.db.Query(ctx, seatColumns+`
		WHERE s.org_id = $1 AND s.event_id = $2 AND s.id = ANY($3::uuid[]) ORDER BY s.idx`, org, event, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSeat)
}

func scanSeat(r pgx.CollectableRow) (Seat, error) {
	var x Seat
	var holdID, holderID *uuid.UUID
	var until *time.Time
	err := r.Scan(&x.ID, &x.SectionID, &x.Row, &x.Number, &x.Idx, &x.X, &x.Y, &x.Status, &x.Version, &x.Fence,
		&holdID, &holderID, &until, &x.Category, &x.Accessible, &x.Companion)
	if holdID != nil {
		x.HoldID = *holdID
	}
	if holderID != nil {
		x.HolderID = *holderID
	}
	if until != nil {
		x.HeldUntil = until.UTC()
	}
	return x, err
}

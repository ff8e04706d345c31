package store

import "github.com/jackc/pgx/v5"

// BlockBatches takes every statement slot of both hold batchers, so
// holds queue until unblock is called; queued says how many wait.
func (s *Holds) BlockBatches() (queued func() int, unblock func()) {
	bs := []*holdBatcher{s.batch, s.together}
	var resume []func()
	for _, b := range bs {
		resume = append(resume, b.Pause())
	}
	queued = func() int { return s.batch.Queued() + s.together.Queued() }
	unblock = func() {
		for _, r := range resume {
			r()
		}
	}
	return queued, unblock
}

// ChangesSQL and LineSQL are the change feed's reads, for plan tests.
const (
	ChangesSQL = changesSQL
	LineSQL    = lineSQL
)

// SeatColumns is the read of seats with their holds, for plan tests.
const SeatColumns = seatColumns

// RowKeyExpr is a seat row's advisory lock key in SQL, for comparing
// with RowKey.
const RowKeyExpr = rowKeyExpr

// BinarySeatRows says whether rows would be read by the binary seat
// decoder rather than the generic scan.
func BinarySeatRows(rows pgx.Rows) bool { return binarySeatRows(rows) }

// BetweenReadAndWrite runs f in every shared hold transaction after its
// reads and before its hold statement.
func (s *Holds) BetweenReadAndWrite(f func()) { s.betweenReadAndWrite = f }

// AttendeesAllSQL is a page of the attendee list, for plan tests.
const AttendeesAllSQL = attendeesAll

// AttendeesFoundSQL is the attendee list's search, for plan tests.
const AttendeesFoundSQL = attendeesFound

// ClaimDeliveriesSQL is the webhook worker's claim, for plan tests.
const ClaimDeliveriesSQL = claimDeliveriesSQL

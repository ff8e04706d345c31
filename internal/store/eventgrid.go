package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// NewSeat describes a seat to create.
type NewSeat struct {
	Row    string
	Number int
	X, Y   int
}

// NewSection describes a section and its seats.
type NewSection struct {
	Label string
	Name  string
	Seats []NewSeat
}

// Create creates an event with its sections and seats in one
// transaction; seats get consecutive idx values (their bitmap positions).
// Seats are copied in bulk so a 100 000-seat event takes seconds.
func (s *Events) Create(ctx context.Context, org uuid.UUID, name, venue string, startsAt time.Time, sections []NewSection) (Event, error) {
	e := Event{ID: NewID(), OrgID: org, EventSpec: EventSpec{Name: name, Venue: venue, StartsAt: startsAt, TimeZone: "UTC",
		OrphanRule: "off"}, Status: EventOnSale}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		// On sale with no window: the grid events of the tests and the
		// bench behave as every event did before the lifecycle existed.
		if _, err := tx.Exec(ctx, `INSERT INTO events (id, org_id, name, venue, starts_at, status) VALUES ($1, $2, $3, $4, $5, 'on_sale')`,
			e.ID, org, name, venue, startsAt); err != nil {
			return err
		}
		var rows [][]any
		idx := 0
		for pos, sec := range sections {
			secID := NewID()
			if _, err := tx.Exec(ctx, `INSERT INTO sections (id, org_id, event_id, label, name, position) VALUES ($1, $2, $3, $4, $5, $6)`,
				secID, org, e.ID, sec.Label, sec.Name, pos); err != nil {
				return err
			}
			for _, st := range sec.Seats {
				rows = append(rows, []any{NewID(), org, e.ID, secID, st.Row, st.Number, idx, st.X, st.Y})
				idx++
			}
		}
		e.Seats = idx
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"seats"},
			[]string{"id", "org_id", "event_id", "section_id", "row_label", "number", "idx", "x", "y"},
			pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		return seatsMade(ctx, tx, org, e.ID, idx)
	})
	return e, err
}

// seatsMade records how many seats event has (events.seat_count: they are
// never added or removed after) and brings the planner's statistics of
// seats up to date after an event's seats are written in bulk, in the same
// transaction (its own rows count). Without it a new event is unknown to
// them — while the table holds few events every one is a most common value,
// so a new one is estimated at a row or two — and Postgres plans the
// event's queries for a handful of rows: under a crowd the strict rule's
// row read became a nested loop over the whole event, 1 to 2 s a statement
// instead of about a millisecond, until autovacuum analyzed the table (it
// waits for a tenth of the table to change, which one event on a large
// table never is).
//
// ANALYZE waits for another ANALYZE of seats to end: another event being
// created commits, and autovacuum gives way to a waiter after
// deadlock_timeout (1 s). The pool's lock timeout (500 ms, made for the
// hold paths, which must fail fast) turned either into a failed event;
// this wait has its own. So does the statement, which counts that wait
// and the read of up to 30 000 of the table's pages: under the pool's
// statement timeout (5 s, made for requests) a wait or a large seats
// table on a busy disk failed an event whose rows were all written.
func seatsMade(ctx context.Context, tx pgx.Tx, org, event uuid.UUID, n int) error {
	if _, err := tx.Exec(ctx, `
		WITH n AS (UPDATE events SET seat_count = $3 WHERE org_id = $1 AND id = $2)
		SELECT set_config('lock_timeout', '10s', true), set_config('statement_timeout', '60s', true)`, org, event, n); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `ANALYZE seats`)
	return err
}

// GridSection lays out a rectangular section: rows labelled A, B, ... (AA
// after Z), seats numbered from 1, drawn at (x0+seat, y0+row).
func GridSection(label, name string, rows, perRow, x0, y0 int) NewSection {
	sec := NewSection{Label: label, Name: name}
	for r := range rows {
		for n := 1; n <= perRow; n++ {
			sec.Seats = append(sec.Seats, NewSeat{Row: RowLabel(r), Number: n, X: x0 + n - 1, Y: y0 + r})
		}
	}
	return sec
}

// RowLabel names row r (0-based): A..Z, then AA, AB, ...
func RowLabel(r int) string {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if r < 26 {
		return letters[r : r+1]
	}
	return RowLabel(r/26-1) + letters[r%26:r%26+1]
}

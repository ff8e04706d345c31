package store

import (
	"github.com/google/uuid"

	"seatd/internal/chart"
)

// GARow is the row label of a general-admission section's places.
//
// A GA section of capacity N is stored as N place rows in seats (row GARow,
// numbered 1..N, drawn nowhere). So a place is held, bought, released,
// expired, counted and exported by the same statements as a seat, with the
// same rules (the buyer's cap counts places, the sales window, the event's
// TTL, fencing), and a flash sale does not serialize on one counter row:
// each buyer claims different rows (see hold.Holds.ga), so concurrent holds
// lock different rows and Postgres' row-level check (status = 'available')
// is the one guard against overselling, whatever Redis says.
const GARow = "GA"

// layoutColumns are the seats columns an event made from a chart is
// copied into, in the order layoutRows gives them.
var layoutColumns = []string{"id", "org_id", "event_id", "section_id", "row_label", "number", "idx", "x", "y", "category",
	"accessible", "companion"}

// layoutRows is the seats rows of an event made from chart c, given to
// COPY one at a time (pgx.CopyFromSource): each section's seats in row
// order, or its places 1..capacity, section after section, with
// consecutive idx. Only the row being encoded exists at any moment: a
// chart of 200 000 places used to become 200 000 rows in memory before the
// COPY began (chart.MaxSeats bounds the rows; this bounds the memory).
type layoutRows struct {
	org, event uuid.UUID
	c          chart.Chart
	sections   []uuid.UUID // the ids of c's sections, in order
	// The next row: section, row of a seated section, seat of the row or
	// place of a standing section.
	sec, row, seat int
	idx            int
	vals           []any // reused: pgx encodes a row before asking for the next
}

func newLayoutRows(org, event uuid.UUID, c chart.Chart, sections []uuid.UUID) *layoutRows {
	return &layoutRows{org: org, event: event, c: c, sections: sections, vals: make([]any, len(layoutColumns))}
}

// Next moves to the next row; false after the last.
func (l *layoutRows) Next() bool {
	for l.sec < len(l.c.Sections) {
		s := l.c.Sections[l.sec]
		switch {
		case s.Kind == chart.GA && l.seat < s.Capacity:
			l.seat++
			l.set(GARow, l.seat, 0, 0, s.Category, false, false)
			return true
		case s.Kind != chart.GA && l.row < len(s.Rows) && l.seat < len(s.Rows[l.row].Seats):
			st := s.Rows[l.row].Seats[l.seat]
			l.seat++
			l.set(s.Rows[l.row].Label, st.Number, st.X, st.Y, st.Category, st.Accessible, st.Companion)
			return true
		case s.Kind != chart.GA && l.row < len(s.Rows):
			l.row, l.seat = l.row+1, 0
		default:
			l.sec, l.row, l.seat = l.sec+1, 0, 0
		}
	}
	return false
}

func (l *layoutRows) set(row string, number, x, y int, category string, accessible, companion bool) {
	var cat any // NULL for none
	if category != "" {
		cat = category
	}
	v := l.vals
	v[0], v[1], v[2], v[3], v[4], v[5] = NewID(), l.org, l.event, l.sections[l.sec], row, number
	v[6], v[7], v[8], v[9], v[10], v[11] = l.idx, x, y, cat, accessible, companion
	l.idx++
}

// Values is the current row.
func (l *layoutRows) Values() ([]any, error) { return l.vals, nil }

// Err is always nil: the rows come from a chart in memory.
func (l *layoutRows) Err() error { return nil }

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

// gaPlaceRows are the seats rows (columns as in createFromLayout) of
// a GA section's places, from index idx on.
func gaPlaceRows(org, event, section uuid.UUID, sec chart.Section, idx int) [][]any {
	var cat *string
	if sec.Category != "" {
		cat = &sec.Category
	}
	rows := make([][]any, sec.Capacity)
	for n := range sec.Capacity {
		rows[n] = []any{NewID(), org, event, section, GARow, n + 1, idx + n, 0, 0, cat, false, false}
	}
	return rows
}

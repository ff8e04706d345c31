package store

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RowSeat is one seat of a row as the orphan rule sees it.
type RowSeat struct {
	ID     uuid.UUID
	Number int
	Free   bool // available to anyone
}

// NewOrphans returns the seats of a row that taking the seats in take
// would leave alone: free afterwards, with no free neighbour on either
// side (the neighbour of number n is n-1 or n+1; a missing number is the
// row's end or an aisle), where they had one before. A seat already alone
// is not blamed on this hold. row may be in any order.
func NewOrphans(row []RowSeat, take map[uuid.UUID]bool) []uuid.UUID {
	free := make(map[int]bool, len(row))
	after := make(map[int]bool, len(row))
	for _, s := range row {
		free[s.Number] = s.Free
		after[s.Number] = s.Free && !take[s.ID]
	}
	var out []uuid.UUID
	for _, s := range row {
		n := s.Number
		if after[n] && !after[n-1] && !after[n+1] && (free[n-1] || free[n+1]) {
			out = append(out, s.ID)
		}
	}
	return out
}

// lockRows serializes strict-rule holds on the rows of the requested
// seats for the rest of the transaction: two buyers whose holds are fine
// alone but together leave one seat alone must be checked one after the
// other. Rows are locked in a fixed order (so two multi-row holds cannot
// deadlock), before any seat row lock, and transaction-scoped advisory
// locks leave plain holds and releases unaffected. The same read says
// whether the rule binds the request at all, from the event row inside
// the transaction (its orphan_rule is strict and the actor is not staff):
// when it does not, nothing is locked and it returns false.
func lockRows(ctx context.Context, tx pgx.Tx, p HoldParams) (bool, error) {
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT hashtextextended(s.event_id::text || '/' || s.section_id::text || '/' || s.row_label, 0) AS k
		FROM seats s JOIN events e ON e.org_id = s.org_id AND e.id = s.event_id
		WHERE s.org_id = $1 AND s.event_id = $2 AND s.id = ANY($3::uuid[]) AND e.orphan_rule = 'strict' AND NOT $4
		ORDER BY k`,
		p.Org, p.Event, seatIDs(p.Seats), p.Staff)
	if err != nil {
		return false, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, k); err != nil {
			return false, err
		}
	}
	return len(keys) > 0, nil
}

// orphansOf reads the rows of the requested seats (inside the
// transaction that locked them with lockRows) and returns the seats the
// hold would leave alone.
func orphansOf(ctx context.Context, tx pgx.Tx, p HoldParams) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		SELECT s.id, s.section_id, s.row_label, s.number, s.status = 'available'
		FROM seats s
		WHERE s.org_id = $1 AND s.event_id = $2 AND (s.section_id, s.row_label) IN (
			SELECT section_id, row_label FROM seats WHERE org_id = $1 AND event_id = $2 AND id = ANY($3::uuid[]))
		ORDER BY s.section_id, s.row_label, s.number`, p.Org, p.Event, seatIDs(p.Seats))
	if err != nil {
		return nil, err
	}
	type key struct {
		sec uuid.UUID
		row string
	}
	byRow := map[key][]RowSeat{}
	var order []key
	var s RowSeat
	var k key
	if _, err := pgx.ForEachRow(rows, []any{&s.ID, &k.sec, &k.row, &s.Number, &s.Free}, func() error {
		if _, ok := byRow[k]; !ok {
			order = append(order, k)
		}
		byRow[k] = append(byRow[k], s)
		return nil
	}); err != nil {
		return nil, err
	}
	take := map[uuid.UUID]bool{}
	for _, r := range p.Seats {
		take[r.SeatID] = true
	}
	var out []uuid.UUID
	for _, k := range order {
		out = append(out, NewOrphans(byRow[k], take)...)
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out, nil
}

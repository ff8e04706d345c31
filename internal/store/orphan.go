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
	// By number, so a seat's neighbours are the entries beside it: no map
	// per call (best available calls this for every candidate block).
	byNumber := func(a, b RowSeat) int { return a.Number - b.Number }
	if !slices.IsSortedFunc(row, byNumber) {
		row = slices.Clone(row)
		slices.SortFunc(row, byNumber)
	}
	after := func(i int) bool { return row[i].Free && !take[row[i].ID] }
	// next is the seat numbered one off from i in direction dir, if any.
	next := func(i, dir int) (int, bool) {
		j := i + dir
		return j, j >= 0 && j < len(row) && row[j].Number == row[i].Number+dir
	}
	var out []uuid.UUID
	for i, s := range row {
		if !after(i) {
			continue
		}
		l, hasL := next(i, -1)
		r, hasR := next(i, +1)
		if (hasL && after(l)) || (hasR && after(r)) {
			continue
		}
		if (hasL && row[l].Free) || (hasR && row[r].Free) {
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
// locks leave plain holds and releases unaffected. The same statement
// says whether the rule binds the request at all, from the event row inside
// the transaction (its orphan_rule is strict and the actor is not staff):
// when it does not, nothing is locked and it returns false.
func lockRows(ctx context.Context, tx pgx.Tx, p HoldParams) (bool, error) {
	rows, err := tx.Query(ctx, lockRowsSQL, rowKeysArgs(p)...)
	if err != nil {
		return false, err
	}
	n, err := countRows(rows)
	return n > 0, err
}

// rowKeysSQL lists, sorted, the advisory lock keys of the rows of seats
// $3 of event $2 of org $1 when the event's orphan rule binds the request
// ($4: staff's request, which it does not bind).
const rowKeysSQL = `
	SELECT DISTINCT ` + rowKeyExpr + ` AS k
	FROM seats s JOIN events e ON e.org_id = s.org_id AND e.id = s.event_id
	WHERE s.org_id = $1 AND s.event_id = $2 AND s.id = ANY($3::uuid[]) AND e.orphan_rule = 'strict' AND NOT $4
	ORDER BY k`

// lockRowsSQL locks the keys of rowKeysSQL in their order, one row each.
const lockRowsSQL = `SELECT pg_advisory_xact_lock(k) FROM (` + rowKeysSQL + `) x`

func rowKeysArgs(p HoldParams) []any { return []any{p.Org, p.Event, seatIDs(p.Seats), p.Staff} }

// countRows reads and counts a query's rows.
func countRows(rows pgx.Rows) (int, error) {
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

// strictCheck is a strict-rule hold's checks in one round trip: the row
// locks (lockRows), then the seats locked and checked (lockAndCheck), then
// the rows read for the rule (orphansOf), in that order in the
// transaction. checked says whether Postgres has the rule binding the
// request (the row locks were taken); when not, the orphans read are
// moot and the caller ignores them.
func strictCheck(ctx context.Context, tx pgx.Tx, p HoldParams) (out HoldOutcome, orphans []uuid.UUID, checked bool, err error) {
	// The seats are read as checked: if the rule binds the request, this
	// transaction checks it below; if not, the event does not ask for it.
	q := p
	q.orphansChecked = true
	var b pgx.Batch
	b.Queue(lockRowsSQL, rowKeysArgs(p)...)
	b.Queue(checkSeatsSQL+"FOR UPDATE OF s", checkSeatsArgs(q)...)
	b.Queue(orphansSQL, p.Org, p.Event, seatIDs(p.Seats))
	br := tx.SendBatch(ctx, &b)
	defer func() { _ = br.Close() }()
	rows, err := br.Query()
	if err != nil {
		return HoldOutcome{}, nil, false, err
	}
	n, err := countRows(rows)
	if err != nil {
		return HoldOutcome{}, nil, false, err
	}
	if rows, err = br.Query(); err != nil {
		return HoldOutcome{}, nil, false, err
	}
	if out, err = scanCheck(rows, q); err != nil {
		return HoldOutcome{}, nil, false, err
	}
	if rows, err = br.Query(); err != nil {
		return HoldOutcome{}, nil, false, err
	}
	if orphans, err = scanOrphans(rows, p); err != nil {
		return HoldOutcome{}, nil, false, err
	}
	return out, orphans, n > 0, br.Close()
}

// orphansOf reads the rows of the requested seats (inside the
// transaction that locked them with lockRows) and returns the seats the
// hold would leave alone.
func orphansOf(ctx context.Context, tx pgx.Tx, p HoldParams) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, orphansSQL, p.Org, p.Event, seatIDs(p.Seats))
	if err != nil {
		return nil, err
	}
	return scanOrphans(rows, p)
}

// orphansSQL reads every seat of the rows of seats $3, row by row.
const orphansSQL = `
		SELECT s.id, s.section_id, s.row_label, s.number, s.status = 'available'
		FROM seats s
		WHERE s.org_id = $1 AND s.event_id = $2 AND (s.section_id, s.row_label) IN (
			SELECT section_id, row_label FROM seats WHERE org_id = $1 AND event_id = $2 AND id = ANY($3::uuid[]))
		ORDER BY s.section_id, s.row_label, s.number`

// scanOrphans returns the seats that taking p's seats would leave alone
// in the rows of orphansSQL.
func scanOrphans(rows pgx.Rows, p HoldParams) ([]uuid.UUID, error) {
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

package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/pg"
)

// runTogether decides a batch of locked holds of several seats, or under
// the orphan rule, in one transaction (holdsTogether). A request that
// shares a seat with one before it, or that holdsTogether leaves
// undecided, gets a transaction of its own afterwards, as does every
// request of a batch Postgres refused (a cap or unique violation fails
// and rolls back the whole transaction).
func (b *holdBatcher) runTogether(ctx context.Context, batch []*batchedHold) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	b.statements.Add(1)
	b.rows.Add(int64(len(batch)))
	var together, alone []*batchedHold
	seen := map[uuid.UUID]bool{}
	for _, r := range batch {
		if slices.ContainsFunc(r.Req.Seats, func(x HoldRequest) bool { return seen[x.SeatID] }) {
			alone = append(alone, r)
			continue
		}
		for _, x := range r.Req.Seats {
			seen[x.SeatID] = true
		}
		together = append(together, r)
	}
	outs, again, err := b.store.holdsTogether(ctx, b.db, together)
	switch {
	case errors.Is(err, errHoldCap), errors.Is(err, errTogetherAgain), pg.Refused(err):
		alone = append(together, alone...)
	case err != nil:
		// Postgres did not answer: the commit may have happened. Each
		// caller gets the error (an unknown outcome); the change feed
		// tells what happened.
		for _, r := range together {
			r.Answer(batchResult{err: err})
		}
	default:
		for i, r := range together {
			if again[i] {
				alone = append(alone, r)
			} else {
				r.Answer(batchResult{out: outs[i]})
			}
		}
	}
	for _, r := range alone {
		out, err := b.store.holdsInTx(ctx, r.Req)
		r.Answer(batchResult{out: out, err: err})
	}
}

// errTogetherAgain rolls back a shared transaction whose hold statement
// did not write every hold it was given: an event changed between the
// check and the write. Each request is then decided on its own.
var errTogetherAgain = errors.New("hold batch changed during its transaction")

// holdsTogether decides requests in one transaction as if they had come
// one after the other in batch order, with createHoldsTx's checks: the
// rows of every request the orphan rule binds locked (lockRows), every
// seat locked and checked, the rows read once; then each request is
// refused or accepted on its own — the orphan rule applied over the
// holds accepted before it — and one hold statement writes every
// accepted request's holds. again marks requests it could not decide
// (the rule binds one whose rows were not locked or read, because it
// changed meanwhile or the caller's cache had it otherwise).
func (s *Holds) holdsTogether(ctx context.Context, db *pgxpool.Pool, reqs []*batchedHold) (outs []HoldOutcome, again []bool, err error) {
	var g []int32
	var orgs, events, seats []uuid.UUID
	var staff, accessible []bool
	var nows []time.Time
	var ruleOrgs, ruleEvents, ruleSeats []uuid.UUID
	var keys []int64
	for i, r := range reqs {
		for _, x := range r.Req.Seats {
			g = append(g, int32(i)) // #nosec G115 -- a batch is small
			orgs, events, seats = append(orgs, r.Req.Org), append(events, r.Req.Event), append(seats, x.SeatID)
			staff, accessible, nows = append(staff, r.Req.Staff), append(accessible, r.Req.Accessible), append(nows, r.Req.Now)
			if r.Req.Strict {
				ruleOrgs, ruleEvents, ruleSeats = append(ruleOrgs, r.Req.Org), append(ruleEvents, r.Req.Event), append(ruleSeats, x.SeatID)
			}
		}
		if r.Req.Strict {
			for _, k := range r.Req.Rows {
				keys = append(keys, int64(k)) // #nosec G115 -- RowKey's bits back
			}
		}
	}
	outs, again = make([]HoldOutcome, len(reqs)), make([]bool, len(reqs))
	c, err := db.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("acquire: %w", err)
	}
	defer c.Release()
	// Two round trips in all, not four: BEGIN goes with the reads, and
	// COMMIT with the hold statement, which fails (and so rolls back) if
	// it does not write every hold decided here. Each round trip of a
	// crowd's burst waits behind the crowd's requests for this process's
	// scheduler to see its answer, and the transaction's row locks are held
	// meanwhile. A transaction an error left open is rolled back before
	// the connection goes back to the pool.
	defer func() {
		if c.Conn().PgConn().TxStatus() != 'I' {
			_, _ = c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var bt pgx.Batch
	bt.Queue("BEGIN")
	bt.Queue(genericPlansSQL)
	bt.Queue(lockKeysSQL, keys)
	bt.Queue(checkTogetherSQL, g, orgs, events, seats, staff, nows, accessible)
	bt.Queue(rowsTogetherSQL, ruleOrgs, ruleEvents, ruleSeats)
	write, of, err := s.decideTogether(ctx, c, c.SendBatch(ctx, &bt), reqs, outs, again)
	if err != nil {
		return nil, nil, err
	}
	if s.betweenReadAndWrite != nil {
		s.betweenReadAndWrite()
	}
	var commit pgx.Batch
	if len(write) > 0 {
		commit.Queue(holdsAllSQL, append(holdArgs(write), len(write))...)
	}
	commit.Queue("COMMIT")
	br := c.SendBatch(ctx, &commit)
	defer func() { _ = br.Close() }() // before the rollback above: the connection must be free
	var got map[uuid.UUID]heldRow
	if len(write) > 0 {
		res, err := br.Query()
		if err == nil {
			got, err = scanHeld(res, len(write))
		}
		if err != nil {
			if pg.IsHoldsNotAllWritten(err) {
				return nil, nil, errTogetherAgain
			}
			return nil, nil, err
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		// Postgres rolled the transaction back instead (it had failed).
		return nil, nil, errTogetherAgain
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	for j, w := range write {
		outs[of[j]].Created = append(outs[of[j]].Created, w.p.hold(w.req, got[w.req.HoldID].version))
	}
	return outs, again, nil
}

// decideTogether reads the shared transaction's reads (br: BEGIN, the
// plan setting, the row locks, the seats' check and their rows) and
// decides its requests in order into outs and again; it returns the hold
// rows to write and the request of each.
func (s *Holds) decideTogether(ctx context.Context, db pg.DBTX, br pgx.BatchResults, reqs []*batchedHold, outs []HoldOutcome, again []bool) (write []holdRow, of []int, err error) {
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			write, of, err = nil, nil, cerr
		}
	}()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
	}
	locked := map[int64]bool{}
	var key int64
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	if _, err := pgx.ForEachRow(rows, []any{&key, nil}, func() error { locked[key] = true; return nil }); err != nil {
		return nil, nil, err
	}

	type bind struct{ binds, unlocked bool }
	binds := make([]bind, len(reqs))
	found := make([]map[uuid.UUID]bool, len(reqs))
	var c checkRow
	var gi int32
	var binding bool
	if rows, err = br.Query(); err != nil {
		return nil, nil, err
	}
	if _, err := pgx.ForEachRow(rows, append([]any{&gi}, append(c.dest(), &binding, &key)...), func() error {
		if found[gi] == nil {
			found[gi] = map[uuid.UUID]bool{}
		}
		found[gi][c.id] = true
		outs[gi].add(&c, reqs[gi].Req)
		if binding {
			binds[gi].binds = true
			binds[gi].unlocked = binds[gi].unlocked || !locked[key]
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}

	if rows, err = br.Query(); err != nil {
		return nil, nil, err
	}
	byRow, rowOf, err := scanRowsTogether(rows)
	if err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, err
	}

	// The holds accepted so far, and their requests' parameters as
	// the hold statement must see them: the rule checked here.
	taken := map[uuid.UUID]bool{}
	ps := make([]HoldParams, len(reqs))
	for i, r := range reqs {
		out := &outs[i]
		out.settle(r.Req, found[i])
		out.strictUnchecked = false
		if err := sameCustomer(ctx, db, r.Req, out); err != nil {
			return nil, nil, err
		}
		if out.refused() || len(out.Existing) == len(r.Req.Seats) {
			continue
		}
		fresh := slices.DeleteFunc(slices.Clone(r.Req.Seats), func(x HoldRequest) bool {
			return slices.ContainsFunc(out.Existing, func(h Hold) bool { return h.SeatID == x.SeatID })
		})
		if binds[i].binds {
			if binds[i].unlocked || !r.Req.Strict {
				again[i] = true
				continue
			}
			if out.Orphans = orphansAfter(byRow, rowOf, taken, r.Req.Seats); len(out.Orphans) > 0 {
				continue
			}
		}
		ps[i] = r.Req
		ps[i].orphansChecked = true
		for _, x := range fresh {
			taken[x.SeatID] = true
			write = append(write, holdRow{p: &ps[i], req: x})
			of = append(of, i)
		}
	}
	return write, of, nil
}

// orphansAfter returns the seats of the rows of seats that taking them
// would leave alone, once taken (accepted before them) is taken too:
// only those it newly leaves alone, so a seat left alone by a hold the
// rule does not bind (staff's) is not blamed on this one.
func orphansAfter(byRow map[rowKey][]RowSeat, rowOf map[uuid.UUID]rowKey, taken map[uuid.UUID]bool, seats []HoldRequest) []uuid.UUID {
	with := map[uuid.UUID]bool{}
	var keys []rowKey
	for _, x := range seats {
		with[x.SeatID] = true
		if k, ok := rowOf[x.SeatID]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	// Only these rows are looked at: taken's seats in them, not all of
	// taken (a copy of it per request made a batch quadratic).
	for _, k := range keys {
		for _, s := range byRow[k] {
			if taken[s.ID] {
				with[s.ID] = true
			}
		}
	}
	var out []uuid.UUID
	for _, k := range keys {
		before := NewOrphans(byRow[k], taken)
		for _, id := range NewOrphans(byRow[k], with) {
			if !slices.Contains(before, id) {
				out = append(out, id)
			}
		}
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out
}

// rowKey names one row of one event's seats.
type rowKey struct {
	event, section uuid.UUID
	row            string
}

// scanRowsTogether reads rowsTogetherSQL: every row's seats, and the row
// of every seat.
func scanRowsTogether(rows pgx.Rows) (map[rowKey][]RowSeat, map[uuid.UUID]rowKey, error) {
	byRow := map[rowKey][]RowSeat{}
	rowOf := map[uuid.UUID]rowKey{}
	var s RowSeat
	var k rowKey
	_, err := pgx.ForEachRow(rows, []any{&s.ID, &k.event, &k.section, &k.row, &s.Number, &s.Free}, func() error {
		byRow[k] = append(byRow[k], s)
		rowOf[s.ID] = k
		return nil
	})
	return byRow, rowOf, err
}

// rowKeyExpr is the advisory lock key of seat s's row (RowKey).
const rowKeyExpr = `('x' || encode(substring(sha256(convert_to(
	s.event_id::text || '/' || s.section_id::text || '/' || s.row_label, 'UTF8')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint`

// RowKey is the advisory lock key of a row of seats under the strict
// orphan rule: the first 8 bytes of the SHA-256 of "event/section/row",
// as Postgres computes it (rowKeyExpr). A process names the keys of the
// rows its requests hold in from its cache, so the shared transaction
// locks them without reading a seat first (reading 256 seats for their
// keys was half the statements before a batch's hold statement); the
// check that follows reads each seat's key from the seat row itself, and
// a request whose key was not locked is decided again on its own.
func RowKey(event, section uuid.UUID, row string) int64 {
	sum := sha256.Sum256([]byte(event.String() + "/" + section.String() + "/" + row))
	return int64(binary.BigEndian.Uint64(sum[:8])) // #nosec G115 -- a key's bits, not a count
}

// genericPlansSQL makes the shared transaction's statements run on their
// generic plans from their first run on a connection, and from the first
// after a table's statistics change. Left to choose, Postgres plans a
// prepared statement afresh for each of its first five runs on a
// connection, about 0.6 ms each for the check, the row read and the hold
// statement (pg_stat_statements), and keeps custom plans while it guesses
// them cheaper. These statements take arrays of ids only, so their generic
// plans are the custom ones (index scans by seat id, the rows' seats by
// their row's key; EXPLAIN EXECUTE under this setting).
const genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`

// lockKeysSQL locks the given row keys in their order, one row each.
const lockKeysSQL = `SELECT k, pg_advisory_xact_lock(k) FROM (SELECT DISTINCT k FROM unnest($1::bigint[]) AS k ORDER BY k) x`

// checkTogetherSQL is checkSeatsSQL, locking, for the seats of several
// requests (request index, org, event, seat, staff's, now, accessible),
// read as checked for the rule: each row also says whether the rule
// binds it and its row's lock key.
const checkTogetherSQL = `
	SELECT r.g, s.id, s.status, s.fence, h.id, h.user_id, h.held_until, h.created_at, h.extensions, h.fence, h.source, s.version,
	       event_open(e.status, e.on_sale_at, e.sales_end_at, r.staff, r.now),
	       accessible_open(s.accessible, s.companion, e.accessible_release_at, r.staff OR r.accessible, r.now),
	       true, coalesce(e.accessible_release_at, 'epoch'),
	       e.orphan_rule = 'strict' AND NOT r.staff, ` + rowKeyExpr + `
	FROM unnest($1::int[], $2::uuid[], $3::uuid[], $4::uuid[], $5::bool[], $6::timestamptz[], $7::bool[])
	     AS r(g, org_id, event_id, seat_id, staff, now, accessible)
	JOIN seats s ON s.org_id = r.org_id AND s.event_id = r.event_id AND s.id = r.seat_id
	JOIN events e ON e.org_id = s.org_id AND e.id = s.event_id
	LEFT JOIN seat_holds h ON h.org_id = s.org_id AND h.id = s.hold_id
	ORDER BY s.id
	FOR UPDATE OF s`

// rowsTogetherSQL reads every seat of the rows of the given seats (org,
// event, seat), for the orphan rule.
const rowsTogetherSQL = `
	SELECT s.id, s.event_id, s.section_id, s.row_label, s.number, s.status = 'available'
	FROM seats s
	WHERE (s.org_id, s.event_id, s.section_id, s.row_label) IN (
		SELECT x.org_id, x.event_id, x.section_id, x.row_label
		FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS r(org_id, event_id, seat_id)
		JOIN seats x ON x.org_id = r.org_id AND x.event_id = r.event_id AND x.id = r.seat_id)`

package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/coalesce"
	"seatd/internal/pg"
)

// holdsSQL is the one statement that takes holds: a single seat, the
// seats of one request (inside its transaction) or a batch of several
// buyers' requests. Every row carries its own organization, event, user,
// times, source and cap, and every filter and insert uses the row's own
// values, so one statement can serve holds of several buyers, events and
// tenants without mixing them. A row is taken only while its event is open
// to the row's actor (event_open: on sale and inside the sales window for
// a buyer, not closed for staff), read from the event row in the
// statement's own snapshot: a change of status or window that committed
// before the statement began is always seen, so Postgres alone decides
// here too, whatever a process's cache says. The same snapshot decides
// the choosing rules (docs/architecture.md#choosing-seats): an accessible or companion seat before
// the event's accessible_release_at only for a row that asked for one or
// is staff's (accessible_open), and on an event whose orphan rule is
// strict only rows whose request checked the rule in its transaction, or
// staff's (orphan_rule_met). A buyer's cap is the event's
// own when it has one, but never above the row's ceiling (a new
// account's cap). Each buyer's count of active holds rises in
// the same statement; a row lifting it above the buyer's cap fails the
// statement (buyer_holds_cap) and nothing of it is written. A hold of a
// keyed request carries the request's id (see Holds.ClaimRequest).
const holdsSQL = `
WITH r AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::bigint[], $6::uuid[],
                         $7::timestamptz[], $8::timestamptz[], $9::text[], $10::int[], $11::bool[], $12::bool[],
                         $13::bool[], $14::uuid[], $15::int[])
        AS r(org_id, event_id, seat_id, hold_id, fence, user_id, created, held_until, source, cap, staff, accessible,
             orphans_checked, request_id, ceiling)
), upd AS (
    UPDATE seats s
    SET status = 'held', hold_id = r.hold_id, version = s.version + 1, fence = r.fence, updated_at = r.created
    FROM r JOIN events e ON e.org_id = r.org_id AND e.id = r.event_id
    WHERE s.org_id = r.org_id AND s.event_id = r.event_id AND s.id = r.seat_id
      AND s.status = 'available' AND s.fence < r.fence
      AND event_open(e.status, e.on_sale_at, e.sales_end_at, r.staff, r.created)
      AND accessible_open(s.accessible, s.companion, e.accessible_release_at, r.staff OR r.accessible, r.created)
      AND orphan_rule_met(e.orphan_rule, r.staff, r.orphans_checked)
    RETURNING s.id, s.version, r.hold_id, r.fence, r.org_id, r.event_id, r.user_id, r.created, r.held_until, r.source,
              CASE WHEN r.cap = 2147483647 THEN r.cap ELSE least(coalesce(e.max_holds_per_buyer, r.cap), r.ceiling) END AS cap,
              nullif(r.request_id, '00000000-0000-0000-0000-000000000000') AS request_id
), ins AS (
    INSERT INTO seat_holds (id, org_id, event_id, seat_id, user_id, status, held_until, fence, source, created_at, request_id)
    SELECT hold_id, org_id, event_id, id, user_id, 'active', held_until, fence, source, created, request_id FROM upd
), aud AS (
    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data, at)
    SELECT org_id, event_id, user_id, 'hold.created', 'seat_hold', hold_id, id,
           jsonb_build_object('fence', fence, 'held_until', held_until, 'source', source), created
    FROM upd
), cnt AS (
    INSERT INTO buyer_holds AS b (org_id, event_id, user_id, active, cap)
    SELECT org_id, event_id, user_id, count(*), max(cap) FROM upd
    GROUP BY org_id, event_id, user_id ORDER BY org_id, event_id, user_id
    ON CONFLICT (org_id, event_id, user_id) DO UPDATE SET active = b.active + excluded.active, cap = excluded.cap
)
SELECT id, version, hold_id FROM upd`

// holdsAllSQL is holdsSQL for a shared transaction that commits in the
// same round trip: its last parameter is how many rows it must write, and
// it fails (holds_all_written) when it writes fewer. The second branch is
// one row of the count, always evaluated, never returned.
const holdsAllSQL = holdsSQL + `
UNION ALL
SELECT NULL::uuid, NULL::bigint, NULL::uuid FROM (SELECT count(*) AS n FROM upd) c WHERE holds_all_written(c.n, $16)`

// HoldStatement is the SQL of the shared hold statement (holdsSQL), for
// the bench's reference run of the very statement seatd sends.
func HoldStatement() string { return holdsSQL }

// noCap is the cap of a hold request without one.
const noCap = 1<<31 - 1

// holdRow is one seat of one request in a hold statement.
type holdRow struct {
	p   *HoldParams
	req HoldRequest
}

// heldRow is what the statement wrote for one hold id.
type heldRow struct {
	seat    uuid.UUID
	version int64
}

// runHoldStatement sends one hold statement for rows and returns, by hold
// id, the rows it committed (autocommitted unless db is a transaction).
func runHoldStatement(ctx context.Context, db pg.DBTX, rows []holdRow) (map[uuid.UUID]heldRow, error) {
	res, err := db.Query(ctx, holdsSQL, holdArgs(rows)...)
	if err != nil {
		return nil, err
	}
	return scanHeld(res, len(rows))
}

// holdArgs are the hold statement's parameters for rows.
func holdArgs(rows []holdRow) []any {
	n := len(rows)
	orgs, events, seats, holds, users := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n),
		make([]uuid.UUID, n), make([]uuid.UUID, n)
	fences := make([]int64, n)
	nows, untils := make([]time.Time, n), make([]time.Time, n)
	sources := make([]string, n)
	caps, ceilings := make([]int32, n), make([]int32, n)
	staff, accessible, checked := make([]bool, n), make([]bool, n), make([]bool, n)
	requests := make([]uuid.UUID, n)
	for i, r := range rows {
		p, st := r.p, r.req
		orgs[i], events[i], seats[i], holds[i], users[i], requests[i] = p.Org, p.Event, st.SeatID, st.HoldID, p.User, p.Request
		fences[i], nows[i], untils[i], sources[i] = st.Fence, p.Now, p.HeldUntil, p.Source
		caps[i], staff[i], accessible[i], checked[i] = noCap, p.Staff, p.Accessible, p.orphansChecked
		if p.Cap > 0 && p.Cap < noCap {
			caps[i] = int32(p.Cap) // #nosec G115 -- bounded just above
		}
		ceilings[i] = noCap
		if p.Ceiling > 0 && p.Ceiling < noCap {
			ceilings[i] = int32(p.Ceiling) // #nosec G115 -- bounded just above
		}
	}
	return []any{orgs, events, seats, holds, fences, users, nows, untils, sources, caps, staff, accessible, checked, requests,
		ceilings}
}

// scanHeld reads a hold statement's rows: by hold id, what it wrote.
func scanHeld(res pgx.Rows, n int) (map[uuid.UUID]heldRow, error) {
	got := make(map[uuid.UUID]heldRow, n)
	var x heldRow
	var hold uuid.UUID
	_, err := pgx.ForEachRow(res, []any{&x.seat, &x.version, &hold}, func() error {
		got[hold] = x
		return nil
	})
	if pg.IsCheckViolation(err, "buyer_holds_cap") {
		return nil, errHoldCap
	}
	return got, err
}

// holdBatcher coalesces concurrent fast-path holds (see coalesce): one
// round trip, one commit and one WAL flush for many holds. A store has
// two: single-seat holds share one autocommitted statement
// (runStatement); holds of several seats, or under the orphan rule, share
// one transaction (runTogether).
//
// Outcomes stay per request: a single-seat request whose row came back
// was committed; one whose row did not is answered "not created" and its
// caller reads the seat to say why, exactly as after a single statement.
// If the batch statement fails (a unique violation of one row fails them
// all), every request of it is retried on its own.
type holdBatcher struct {
	store *Holds
	db    *pgxpool.Pool // the connections its statements and transactions run on
	*coalesce.Batcher[HoldParams, batchResult]

	statements, rows atomic.Int64 // for metrics
}

type batchedHold = coalesce.Call[HoldParams, batchResult]

type batchResult struct {
	out HoldOutcome
	err error
}

// Batch turns on coalescing of locked holds: at most slots
// statements (and as many transactions) at once, each with at most max
// holds, the statements on statements and the transactions on
// transactions (nil: the store's pool). max < 2 leaves it off.
//
// Each is best a pool of its own, of slots connections: the store's pool
// hands out its idle connections in turn, so in a crowd's burst each
// shared transaction met a backend that had not run its statements
// lately, and Postgres planned them afresh (it plans a prepared statement
// for each of its first five runs on a connection); on connections of
// their own the statements run on cached plans in warm backends, as few
// as run at once, each planning again only when a table's statistics
// change.
func (s *Holds) Batch(slots, max int, statements, transactions *pgxpool.Pool) {
	if max < 2 || slots < 1 {
		s.batch, s.together = nil, nil
		return
	}
	s.batch = &holdBatcher{store: s, db: cmp.Or(statements, s.db)}
	s.batch.Batcher = coalesce.New(slots, max, s.batch.runStatement)
	s.together = &holdBatcher{store: s, db: cmp.Or(transactions, s.db)}
	s.together.Batcher = coalesce.New(slots, max, s.together.runTogether)
	s.together.Apart(func(p HoldParams) []uint64 {
		if !p.Strict {
			return nil
		}
		return p.Rows
	})
}

// BatchStats reports how many statements and transactions the hold
// batchers sent and how many hold requests they carried (zero when
// batching is off).
func (s *Holds) BatchStats() (statements, rows int64) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.statements.Load() + s.together.statements.Load(), s.batch.rows.Load() + s.together.rows.Load()
}

// runStatement sends one statement for a batch of single-seat holds and
// answers every request. The statement does not inherit the flusher's
// cancellation: it carries other buyers' holds.
func (b *holdBatcher) runStatement(ctx context.Context, batch []*batchedHold) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	b.statements.Add(1)
	b.rows.Add(int64(len(batch)))
	if len(batch) == 1 {
		b.runAlone(ctx, batch[0])
		return
	}
	// A seat asked twice (the same buyer repeating a click) goes in once;
	// the repeat is answered "not created", so its caller finds the hold
	// already the buyer's, as it would after a statement of its own.
	uniq, dup := byKey(batch, func(r *batchedHold) uuid.UUID { return r.Req.Seats[0].SeatID })
	defer func() {
		for _, r := range dup {
			r.Answer(batchResult{})
		}
	}()
	batch = uniq
	rows := make([]holdRow, len(batch))
	for i, r := range batch {
		rows[i] = holdRow{p: &r.Req, req: r.Req.Seats[0]}
	}
	got, err := runHoldStatement(ctx, b.db, rows)
	if err != nil && !errors.Is(err, errHoldCap) && !pg.Refused(err) {
		// Postgres did not answer. If the statement was sent, it may have
		// committed, so sending the holds again would answer "already
		// yours" for holds this very request made; if it was not (no
		// connection could be made), neither would the holds alone be.
		// Each caller gets the error (an unknown outcome when it may have
		// committed); the change feed tells what happened.
		for _, r := range batch {
			r.Answer(batchResult{err: err})
		}
		return
	}
	if err != nil {
		// Postgres refused the statement (one bad row fails it whole, and
		// rolls it back): decide each hold on its own.
		for _, r := range batch {
			b.runAlone(ctx, r)
		}
		return
	}
	for _, r := range batch {
		p, st := r.Req, r.Req.Seats[0]
		x, ok := got[st.HoldID]
		if !ok || x.seat != st.SeatID {
			r.Answer(batchResult{})
			continue
		}
		r.Answer(batchResult{out: HoldOutcome{Created: []Hold{p.hold(st, x.version)}}})
	}
}

// byKey splits a batch into the first call of each key, sorted by key,
// and the repeats. Sorted, every statement locks its rows in one order,
// so two statements that meet on a row (a repeat racing its first
// request) wait rather than deadlock.
func byKey[C any](batch []C, key func(C) uuid.UUID) (uniq, repeats []C) {
	seen := make(map[uuid.UUID]bool, len(batch))
	for _, c := range batch {
		if k := key(c); seen[k] {
			repeats = append(repeats, c)
		} else {
			seen[k] = true
			uniq = append(uniq, c)
		}
	}
	slices.SortFunc(uniq, func(x, y C) int {
		kx, ky := key(x), key(y)
		return bytes.Compare(kx[:], ky[:])
	})
	return uniq, repeats
}

// runAlone sends one hold in the single-seat statement of its own.
func (b *holdBatcher) runAlone(ctx context.Context, r *batchedHold) {
	created, err := insertHolds(ctx, b.db, r.Req, r.Req.Seats)
	r.Answer(batchResult{out: HoldOutcome{Created: created}, err: err})
}

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/pg"
)

// Create holds every requested seat for the user or none of them.
// Seats are locked in id order so that overlapping multi-seat attempts can
// never deadlock. The returned error is nil when the outcome explains a
// refusal (Taken, Missing, Stale); it is an error only when Postgres failed.
func (s *Holds) Create(ctx context.Context, p HoldParams) (HoldOutcome, error) {
	p.orphansChecked = p.GA
	p.Strict = p.Strict && !p.GA
	p.Fresh = p.Fresh || p.GA
	// A buyer's holds may share a statement, or a transaction, with other
	// buyers'; a customer's are written with the customer in a transaction
	// of their own. A single seat goes in the shared statement whether or
	// not Redis locked it: the statement takes it only if it is free, and
	// it waits for a row lock at most behind the few statements in flight
	// (the batcher sends a seat once a statement, so a crowd on one seat
	// never queues there). The shared transaction's row locks wait too, so
	// requests that must not wait long (ShortWait, the Postgres-only path)
	// leave it for a transaction of their own.
	shared := p.Customer == nil
	if shared && len(p.Seats) == 1 && !p.Strict {
		out, err := s.createOneHold(ctx, p)
		if err != nil || !out.strictUnchecked {
			return out, err
		}
		// Postgres has the event strict, the caller's cache did not.
		p.Strict = true
	}
	if shared && !p.ShortWait && !p.GA && s.together != nil {
		r, err := s.together.Do(ctx, p)
		if err == nil {
			err = r.err
		}
		return r.out, err
	}
	return s.holdsInTx(ctx, p)
}

// holdsInTx is Create in a transaction of its own. A strict event
// whose rule changes between the transaction's read of it and its hold
// statement is met by a new attempt; the rule is not changed that often.
func (s *Holds) holdsInTx(ctx context.Context, p HoldParams) (HoldOutcome, error) {
	for attempt := 0; ; attempt++ {
		out, err := s.createHoldsTx(ctx, p)
		if err == nil && out.strictUnchecked && attempt < 3 {
			p.Strict = true
			continue
		}
		out.strictUnchecked = false
		return out, err
	}
}

// createHoldsTx is Create in a transaction of its own.
func (s *Holds) createHoldsTx(ctx context.Context, p HoldParams) (HoldOutcome, error) {
	var out HoldOutcome
	var opts pgx.TxOptions
	if p.ShortWait {
		opts.BeginQuery = "BEGIN; SET LOCAL lock_timeout = '" + shortLockWait + "'"
	}
	err := inTxWith(ctx, s.db, opts, func(tx pgx.Tx) error {
		p := p
		var orphans []uuid.UUID
		check := false // this transaction applies the orphan rule
		var err error
		if p.Strict && !p.orphansChecked {
			out, orphans, check, err = strictCheck(ctx, tx, p)
			p.orphansChecked = check
		} else {
			out, err = lockAndCheck(ctx, tx, p)
		}
		if err == nil {
			err = sameCustomer(ctx, tx, p, &out)
		}
		if err != nil || out.refused() || out.strictUnchecked {
			return err
		}
		if check && len(out.Existing) < len(p.Seats) {
			if out.Orphans = orphans; len(out.Orphans) > 0 {
				return nil
			}
		}
		fresh := slices.DeleteFunc(slices.Clone(p.Seats), func(r HoldRequest) bool {
			return slices.ContainsFunc(out.Existing, func(h Hold) bool { return h.SeatID == r.SeatID })
		})
		if len(fresh) == 0 {
			return nil
		}
		created, err := insertHolds(ctx, tx, p, fresh)
		if err != nil {
			return err
		}
		if len(created) != len(fresh) {
			// The event may have closed (or its window ended) between the
			// check and the write: the statement reads the event anew.
			if again, err := checkSeats(ctx, tx, p, ""); err == nil && (again.refused() || again.strictUnchecked) {
				out = again
				return errChangedMeanwhile
			}
			// The rows are locked by us and were checked just above, so this
			// means a bug, not a race. Refuse rather than commit part of it.
			return fmt.Errorf("hold: %d of %d seats updated after lock", len(created), len(fresh))
		}
		if p.Customer != nil {
			ids := make([]uuid.UUID, len(created))
			for i, h := range created {
				ids[i] = h.ID
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO hold_customers (hold_id, org_id, name, email, note)
				SELECT id, $1, $3, $4, $5 FROM unnest($2::uuid[]) AS id`,
				p.Org, ids, p.Customer.Name, p.Customer.Email, p.Customer.Note); err != nil {
				return err
			}
		}
		out.Created = created
		return nil
	})
	if errors.Is(err, errChangedMeanwhile) {
		out.Existing, out.Created = nil, nil
		return out, nil
	}
	if pg.IsLockNotAvailable(err) {
		// Somebody else is mid-transaction on one of these seats right now.
		return HoldOutcome{Taken: seatIDs(p.Seats)}, nil
	}
	if pg.IsUniqueViolation(err) {
		// A concurrent request won; it may have been the same user's.
		out, err := checkSeats(ctx, s.db, p, "")
		if err == nil {
			err = sameCustomer(ctx, s.db, p, &out)
		}
		return out, err
	}
	if err != nil {
		return HoldOutcome{}, err
	}
	if out.refused() || out.strictUnchecked || len(out.Orphans) > 0 {
		out.Created = nil
	}
	return out, nil
}

// errChangedMeanwhile rolls back a hold whose event changed between its
// check and its write (closed, its window or choosing rules changed): the
// statement reads the event anew.
var errChangedMeanwhile = errors.New("event changed during the hold")

// createOneHold is the fast path: one statement, autocommitted, because a
// single-seat statement cannot be partially applied.
func (s *Holds) createOneHold(ctx context.Context, p HoldParams) (HoldOutcome, error) {
	var created []Hold
	var err error
	if s.batch != nil {
		// Shared with concurrent holds (see holdBatcher).
		var r batchResult
		if r, err = s.batch.Do(ctx, p); err == nil {
			err = r.err
		}
		created = r.out.Created
	} else {
		created, err = insertHolds(ctx, s.db, p, p.Seats)
	}
	if pg.IsLockNotAvailable(err) {
		return HoldOutcome{Taken: seatIDs(p.Seats)}, nil
	}
	if pg.IsUniqueViolation(err) {
		created, err = nil, nil
	}
	if err != nil {
		return HoldOutcome{}, err
	}
	if len(created) == 1 {
		return HoldOutcome{Created: created}, nil
	}
	// Nothing was written (or a concurrent request won the unique index);
	// find out why with a plain read.
	return checkSeats(ctx, s.db, p, "")
}

func insertHolds(ctx context.Context, db pg.DBTX, p HoldParams, reqs []HoldRequest) ([]Hold, error) {
	rows := make([]holdRow, len(reqs))
	for i, r := range reqs {
		rows[i] = holdRow{p: &p, req: r}
	}
	got, err := runHoldStatement(ctx, db, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Hold, 0, len(got))
	for _, r := range reqs {
		if x, ok := got[r.HoldID]; ok && x.seat == r.SeatID {
			out = append(out, p.hold(r, x.version))
		}
	}
	return out, nil
}

// sameCustomer moves the user's existing holds that are not for p's
// customer (or, without one, that are for a customer) to Taken: staff
// holding a seat for one customer have not held it for another.
func sameCustomer(ctx context.Context, db pg.DBTX, p HoldParams, out *HoldOutcome) error {
	if len(out.Existing) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(out.Existing))
	for i, h := range out.Existing {
		ids[i] = h.ID
	}
	rows, err := db.Query(ctx, `SELECT hold_id, name, email, note FROM hold_customers WHERE org_id = $1 AND hold_id = ANY($2::uuid[])`,
		p.Org, ids)
	if err != nil {
		return err
	}
	custs := map[uuid.UUID]Customer{}
	var id uuid.UUID
	var c Customer
	if _, err := pgx.ForEachRow(rows, []any{&id, &c.Name, &c.Email, &c.Note}, func() error {
		custs[id] = c
		return nil
	}); err != nil {
		return err
	}
	keep := out.Existing[:0]
	for _, h := range out.Existing {
		c, ok := custs[h.ID]
		switch {
		case ok != (p.Customer != nil), ok && (c.Email != p.Customer.Email || c.Name != p.Customer.Name):
			out.Taken = append(out.Taken, h.SeatID)
		default:
			if ok {
				h.Customer = &c
			}
			keep = append(keep, h)
		}
	}
	out.Existing = keep
	return nil
}

func lockAndCheck(ctx context.Context, tx pgx.Tx, p HoldParams) (HoldOutcome, error) {
	return checkSeats(ctx, tx, p, "FOR UPDATE OF s")
}

// shortLockWait is HoldParams.ShortWait's bound: several shared hold
// statements' time in flight, and well under deadlock_timeout (1 s), so a
// wait on a statement that locks rows in another order ends here first.
const shortLockWait = "100ms"

// checkSeats reads (and with lock, locks in id order) the requested seats
// and sorts them into the outcome's buckets.
func checkSeats(ctx context.Context, db pg.DBTX, p HoldParams, lock string) (HoldOutcome, error) {
	rows, err := db.Query(ctx, checkSeatsSQL+lock, checkSeatsArgs(p)...)
	if err != nil {
		return HoldOutcome{}, err
	}
	return scanCheck(rows, p)
}

// checkSeatsSQL reads the requested seats with their holds, in id
// order; a lock clause may follow.
const checkSeatsSQL = `
		SELECT s.id, s.status, s.fence, h.id, h.user_id, h.held_until, h.created_at, h.extensions, h.fence, h.source, s.version,
		       event_open(e.status, e.on_sale_at, e.sales_end_at, $4, $5),
		       accessible_open(s.accessible, s.companion, e.accessible_release_at, $4 OR $6, $5),
		       orphan_rule_met(e.orphan_rule, $4, $7), coalesce(e.accessible_release_at, 'epoch')
		FROM seats s JOIN events e ON e.org_id = s.org_id AND e.id = s.event_id
		LEFT JOIN seat_holds h ON h.org_id = s.org_id AND h.id = s.hold_id
		WHERE s.org_id = $1 AND s.event_id = $2 AND s.id = ANY($3::uuid[])
		ORDER BY s.id `

func checkSeatsArgs(p HoldParams) []any {
	return []any{p.Org, p.Event, seatIDs(p.Seats), p.Staff, p.Now, p.Accessible, p.orphansChecked}
}

// scanCheck sorts the rows of checkSeatsSQL into the outcome's buckets.
func scanCheck(rows pgx.Rows, p HoldParams) (HoldOutcome, error) {
	var out HoldOutcome
	var c checkRow
	seen := map[uuid.UUID]bool{}
	if _, err := pgx.ForEachRow(rows, c.dest(), func() error {
		seen[c.id] = true
		out.add(&c, p)
		return nil
	}); err != nil {
		return HoldOutcome{}, err
	}
	out.settle(p, seen)
	return out, nil
}

// checkRow is one seat as checkSeatsSQL reads it.
type checkRow struct {
	id     uuid.UUID
	status SeatStatus
	fence  int64
	hold   struct {
		id, user       *uuid.UUID
		until, created *time.Time
		ext            *int
		fence          *int64
		source         *string
	}
	version                 int64
	open, released, ruleMet bool
	releaseAt               time.Time
}

func (c *checkRow) dest() []any {
	h := &c.hold
	return []any{&c.id, &c.status, &c.fence, &h.id, &h.user, &h.until, &h.created, &h.ext, &h.fence, &h.source, &c.version,
		&c.open, &c.released, &c.ruleMet, &c.releaseAt}
}

// add sorts one requested seat of p into the outcome's buckets.
func (o *HoldOutcome) add(c *checkRow, p HoldParams) {
	if !c.open {
		o.NotOnSale = true
	}
	if !c.ruleMet {
		o.strictUnchecked = true
	}
	o.ReleaseAt = c.releaseAt.UTC()
	req := p.Seats[slices.IndexFunc(p.Seats, func(r HoldRequest) bool { return r.SeatID == c.id })]
	h := &c.hold
	switch {
	case c.status == Held && h.user != nil && *h.user == p.User && h.until.After(p.Now) && !p.Fresh:
		o.Existing = append(o.Existing, Hold{ID: *h.id, OrgID: p.Org, EventID: p.Event, SeatID: c.id, UserID: p.User,
			Status: HoldActive, HeldUntil: h.until.UTC(), CreatedAt: h.created.UTC(), Extensions: *h.ext,
			Fence: *h.fence, Source: *h.source, SeatVersion: c.version})
	case c.status != Available:
		o.Taken = append(o.Taken, c.id)
	case !c.released:
		o.HeldBack = append(o.HeldBack, c.id)
	case c.fence >= req.Fence:
		o.Stale = append(o.Stale, StaleFence{SeatID: c.id, Fence: c.fence})
	}
}

// settle ends an outcome once every row is added: the seats not seen
// are missing, and the rule matters only to a hold nothing else refuses.
func (o *HoldOutcome) settle(p HoldParams, seen map[uuid.UUID]bool) {
	for _, r := range p.Seats {
		if !seen[r.SeatID] {
			o.Missing = append(o.Missing, r.SeatID)
		}
	}
	o.strictUnchecked = o.strictUnchecked && !o.refused() && len(o.Existing) < len(p.Seats)
}

func seatIDs(reqs []HoldRequest) []uuid.UUID {
	ids := make([]uuid.UUID, len(reqs))
	for i, r := range reqs {
		ids[i] = r.SeatID
	}
	return ids
}

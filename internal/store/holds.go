package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// HoldRequest is one seat of a hold attempt: the hold id and fencing token
// the caller obtained (from the Redis lock, or made up on the fallback path).
type HoldRequest struct {
	SeatID uuid.UUID
	HoldID uuid.UUID
	Fence  int64
}

// NewID returns a new id for an event, section, seat or hold. It is
// time-ordered (UUIDv7), so rows made together sit together in every
// index that starts with their id or their event's:
//   - the holds of a burst append to the right edge of seat_holds'
//     primary key instead of each landing on a page of its own (after a
//     checkpoint, a page of its own is a full-page image in the WAL for
//     every hold);
//   - an event's seats, looked up by id in every hold, fill a few pages
//     of seats' keys instead of one page each spread over the keys of
//     every seat ever made: with random ids, a store holding 4.6 million
//     seats made the seat reads of a best-available burst twice as slow
//     as an empty one did.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// HoldParams describes a hold attempt.
type HoldParams struct {
	Org, Event, User uuid.UUID
	Seats            []HoldRequest
	Now, HeldUntil   time.Time
	Source           string
	// NoWait makes row locks fail at once (55P03) instead of waiting: the
	// Postgres-only path's defence against a queue of buyers on one seat.
	NoWait bool
	// Locked says every seat is already exclusively ours in Redis, so a
	// single seat can skip the explicit lock-and-check round trip.
	Locked bool
	// Cap is the most active holds the user may have for the event once
	// these are taken (0: no cap). It is checked in the statement that
	// takes the holds (see buyer_holds), where the event's own cap, if it
	// has one, replaces it.
	Cap int
	// Staff holds outside the sales window (until the event is closed).
	Staff bool
	// Customer, when set, makes these box-office holds for a named
	// customer: the customer is written with the holds, in their
	// transaction, and a seat the user holds already for someone else is
	// taken, not theirs.
	Customer *Customer
	// Strict says the caller's cached settings have the event's orphan
	// rule strict (DESIGN §11), so the hold goes straight to a
	// transaction that reads the rule from the event row and, when it is
	// strict, refuses a hold that would leave a seat alone in its row,
	// with the rows locked. Postgres decides either way: the hold
	// statement refuses a hold that did not check a strict event's rule
	// (orphan_rule_met), and CreateHolds then checks it.
	Strict bool
	// Rows names the rows of Seats by their advisory lock keys (RowKey),
	// for a Strict request: the shared transaction locks them, and
	// shared transactions in flight at once are formed not to share one,
	// as the rule's row locks would have them wait on each other
	// (coalesce.Batcher.Apart).
	Rows []uint64
	// Accessible says the buyer asked for accessible seating: accessible
	// and companion seats held back until the event's
	// accessible_release_at may be theirs (staff always may). The hold
	// statement decides it from the event row (accessible_open).
	Accessible bool
	// GA says the seats are general-admission places, which no orphan
	// rule binds (they have no neighbours a buyer chooses between). GA
	// holds are Fresh.
	GA bool
	// Fresh says every seat must be newly held: one the buyer holds
	// already counts as taken, not as theirs. The request (GA places,
	// best available) asked for that many more seats, and picked this one
	// from a cache that had not seen the buyer's hold yet.
	Fresh bool
	// Request is the keyed hold request these holds answer
	// (HoldKey.Request; zero without a key): each hold carries it, in its
	// own transaction, so a repeat of the request finds them.
	Request uuid.UUID

	// orphansChecked: this request checked the orphan rule in the
	// transaction of its hold statement (with the rows locked).
	orphansChecked bool
}

// hold is the hold a committed request row became.
func (p *HoldParams) hold(r HoldRequest, seatVersion int64) Hold {
	return Hold{ID: r.HoldID, OrgID: p.Org, EventID: p.Event, SeatID: r.SeatID, UserID: p.User, Status: HoldActive,
		HeldUntil: p.HeldUntil, CreatedAt: p.Now, Fence: r.Fence, Source: p.Source, SeatVersion: seatVersion, Customer: p.Customer}
}

// HoldOutcome is what a hold attempt found, seat by seat.
type HoldOutcome struct {
	Created  []Hold       // new holds, committed
	Existing []Hold       // seats already held by the same user (idempotent)
	Taken    []uuid.UUID  // seats held by someone else, sold or blocked
	Missing  []uuid.UUID  // seats not in this event of this org
	Stale    []StaleFence // seats whose fence is newer than ours
	Orphans  []uuid.UUID  // seats the hold would leave alone (Strict)
	// HeldBack lists accessible and companion seats kept for buyers who
	// ask for them until ReleaseAt (see accessible_open).
	HeldBack  []uuid.UUID
	ReleaseAt time.Time
	// NotOnSale says the event does not take this actor's holds now (see
	// event_open); nothing was written.
	NotOnSale bool

	// strictUnchecked: the event's orphan rule is strict and this request
	// did not check it, so the hold statement refused it (and only that).
	strictUnchecked bool
}

// refused reports whether the outcome names a seat that cannot be held.
func (o *HoldOutcome) refused() bool {
	return o.NotOnSale || len(o.Taken)+len(o.Missing)+len(o.Stale)+len(o.HeldBack) > 0
}

// StaleFence names a seat whose stored fence is at or above the token a
// caller brought: the caller's lock is older than a write already applied.
type StaleFence struct {
	SeatID uuid.UUID
	Fence  int64
}

// errHoldCap is a hold statement refused by the buyer's cap.
var errHoldCap = &apperr.Error{Code: apperr.HoldLimit, Message: "the buyer holds as many seats as allowed for this event"}

// Create holds every requested seat for the user or none of them.
// Seats are locked in id order so that overlapping multi-seat attempts can
// never deadlock. The returned error is nil when the outcome explains a
// refusal (Taken, Missing, Stale); it is an error only when Postgres failed.
func (s *Holds) Create(ctx context.Context, p HoldParams) (HoldOutcome, error) {
	p.orphansChecked = p.GA
	p.Strict = p.Strict && !p.GA
	p.Fresh = p.Fresh || p.GA
	// Seats locked in Redis are ours unless Redis lost them, so these
	// holds may share a statement, or a transaction, with other buyers'.
	shared := p.Locked && p.Customer == nil && !p.NoWait
	if shared && len(p.Seats) == 1 && !p.Strict {
		out, err := s.createOneHold(ctx, p)
		if err != nil || !out.strictUnchecked {
			return out, err
		}
		// Postgres has the event strict, the caller's cache did not.
		p.Strict = true
	}
	if shared && !p.GA && s.together != nil {
		r, err := s.together.Do(ctx, p)
		if err == nil {
			err = r.err
		}
		return r.out, err
	}
	return s.holdsInTx(ctx, p)
}

// holdsInTx is CreateHolds in a transaction of its own. A strict event
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

// createHoldsTx is CreateHolds in a transaction of its own.
func (s *Holds) createHoldsTx(ctx context.Context, p HoldParams) (HoldOutcome, error) {
	var out HoldOutcome
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
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
	lock := "FOR UPDATE OF s"
	if p.NoWait {
		lock += " NOWAIT"
	}
	return checkSeats(ctx, tx, p, lock)
}

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

// ActiveIDs reports which of the given holds are active.
func (s *Holds) ActiveIDs(ctx context.Context, org uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM seat_holds WHERE org_id = $1 AND id = ANY($2::uuid[]) AND status = 'active'`, org, ids)
	if err != nil {
		return nil, err
	}
	active := map[uuid.UUID]bool{}
	var id uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		active[id] = true
		return nil
	})
	return active, err
}

// Active returns the active hold on a seat of an event, if any.
func (s *Holds) Active(ctx context.Context, org, event, seat uuid.UUID) (Hold, error) {
	rows, err := s.db.Query(ctx, holdColumns+` WHERE org_id = $1 AND event_id = $2 AND seat_id = $3 AND status = 'active'`,
		org, event, seat)
	if err != nil {
		return Hold{}, err
	}
	h, err := pgx.CollectExactlyOneRow(rows, scanHold)
	return h, notFoundIfNoRows(err, "hold")
}

// ByID returns a hold of org, whatever its status.
func (s *Holds) ByID(ctx context.Context, org, id uuid.UUID) (Hold, error) {
	rows, err := s.db.Query(ctx, holdColumns+` WHERE org_id = $1 AND id = $2`, org, id)
	if err != nil {
		return Hold{}, err
	}
	h, err := pgx.CollectExactlyOneRow(rows, scanHold)
	return h, notFoundIfNoRows(err, "hold")
}

// OfUser lists a user's active holds for an event.
func (s *Holds) OfUser(ctx context.Context, org, event, user uuid.UUID) ([]Hold, error) {
	rows, err := s.db.Query(ctx, holdColumns+`
		WHERE org_id = $1 AND event_id = $2 AND user_id = $3 AND status = 'active' ORDER BY created_at, seat_id`,
		org, event, user)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanHold)
}

// OfEvent lists an event's active holds, soonest expiry first, with
// the customers of box-office holds.
func (s *Holds) OfEvent(ctx context.Context, org, event uuid.UUID) ([]Hold, error) {
	rows, err := s.db.Query(ctx, `
		SELECT h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence,
		       h.source, c.name, c.email, c.note
		FROM seat_holds h LEFT JOIN hold_customers c ON c.org_id = h.org_id AND c.hold_id = h.id
		WHERE h.org_id = $1 AND h.event_id = $2 AND h.status = 'active' ORDER BY h.held_until, h.seat_id`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hold, error) {
		var h Hold
		var c nullCustomer
		err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
			&h.Extensions, &h.Fence, &h.Source, &c.name, &c.email, &c.note)
		h.HeldUntil, h.CreatedAt, h.Customer = h.HeldUntil.UTC(), h.CreatedAt.UTC(), c.customer()
		return h, err
	})
}

const holdColumns = `SELECT id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source FROM seat_holds`

func scanHold(r pgx.CollectableRow) (Hold, error) {
	var h Hold
	err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
		&h.Extensions, &h.Fence, &h.Source)
	h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
	return h, err
}

// Release ends an active hold. Only its holder may release it, unless
// staff is set (box office and organizers of the same org).
func (s *Holds) Release(ctx context.Context, org, holdID, actor uuid.UUID, staff bool, reason string) (Hold, error) {
	rows, err := s.db.Query(ctx, `
		WITH h AS (
		    UPDATE seat_holds SET status = 'released', ended_at = now(), released_by = $3, release_reason = NULLIF($5, '')
		    WHERE org_id = $1 AND id = $2 AND status = 'active' AND ($4 OR user_id = $3)
		    RETURNING id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source
		), st AS (
		    UPDATE seats SET status = 'available', hold_id = NULL, version = version + 1, updated_at = now()
		    FROM h WHERE seats.org_id = $1 AND seats.id = h.seat_id AND seats.hold_id = h.id
		    RETURNING seats.id, seats.version
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		    SELECT $1, h.event_id, $3, 'hold.released', 'seat_hold', h.id, h.seat_id,
		           jsonb_build_object('reason', $5::text, 'by_staff', $4::boolean, 'holder', h.user_id)
		    FROM h
		)
		SELECT h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence, h.source, st.version
		FROM h JOIN st ON st.id = h.seat_id`, org, holdID, actor, staff, reason)
	if err != nil {
		return Hold{}, err
	}
	h, err := pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (Hold, error) {
		var h Hold
		err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
			&h.Extensions, &h.Fence, &h.Source, &h.SeatVersion)
		h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
		return h, err
	})
	if !errors.Is(err, pgx.ErrNoRows) {
		return h, err
	}
	// Nothing changed: say why without telling another tenant anything.
	cur, err := s.ByID(ctx, org, holdID)
	switch {
	case err != nil:
		return Hold{}, err
	case !staff && cur.UserID != actor:
		return Hold{}, apperr.E(apperr.Forbidden, "only the holder or box-office staff can release this hold")
	default:
		return Hold{}, apperr.E(apperr.NotFound, "hold is no longer active (it was %s)", cur.Status)
	}
}

// Extend adds by to every active, unexpired hold of the user for the event
// that has been extended fewer than maxExt times, and returns all the user's
// active holds with the changed ones marked by a non-zero SeatVersion.
func (s *Holds) Extend(ctx context.Context, org, event, user uuid.UUID, by time.Duration, maxExt int) (changed, all []Hold, err error) {
	err = inTx(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH h AS (
			    UPDATE seat_holds SET held_until = held_until + $4::interval, extensions = extensions + 1
			    WHERE org_id = $1 AND event_id = $2 AND user_id = $3 AND status = 'active'
			      AND held_until > now() AND extensions < $5
			    RETURNING id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source
			), st AS (
			    UPDATE seats SET version = version + 1, updated_at = now()
			    FROM h WHERE seats.org_id = $1 AND seats.id = h.seat_id AND seats.hold_id = h.id
			    RETURNING seats.id, seats.version
			), a AS (
			    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
			    SELECT $1, $2, $3, 'hold.extended', 'seat_hold', h.id, h.seat_id, jsonb_build_object('held_until', h.held_until)
			    FROM h
			)
			SELECT h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence, h.source, st.version
			FROM h JOIN st ON st.id = h.seat_id ORDER BY h.seat_id`, org, event, user, by, maxExt)
		if err != nil {
			return err
		}
		changed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hold, error) {
			var h Hold
			err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
				&h.Extensions, &h.Fence, &h.Source, &h.SeatVersion)
			h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
			return h, err
		})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	all, err = s.OfUser(ctx, org, event, user)
	return changed, all, err
}

// Expired is a hold the reaper ended.
type Expired struct {
	Hold
}

// ReapExpired expires up to limit active holds whose time has passed and
// frees their seats. SKIP LOCKED lets every process run it at once: each
// claims a disjoint batch, and a hold being purchased right now is skipped
// (the purchase decides its fate).
func (s *Holds) ReapExpired(ctx context.Context, limit int) ([]Hold, error) {
	rows, err := s.db.Query(ctx, `
		WITH exp AS (
		    UPDATE seat_holds h SET status = 'expired', ended_at = now()
		    WHERE h.status = 'active' AND (h.org_id, h.id) IN (
		        SELECT org_id, id FROM seat_holds WHERE status = 'active' AND held_until < now()
		        ORDER BY held_until LIMIT $1 FOR UPDATE SKIP LOCKED)
		    RETURNING h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions, h.fence, h.source
		), st AS (
		    UPDATE seats SET status = 'available', hold_id = NULL, version = version + 1, updated_at = now()
		    FROM exp WHERE seats.org_id = exp.org_id AND seats.id = exp.seat_id AND seats.hold_id = exp.id
		    RETURNING seats.id, seats.version, seats.idx
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, action, entity, entity_id, seat_id, data)
		    SELECT org_id, event_id, 'hold.expired', 'seat_hold', id, seat_id, jsonb_build_object('held_until', held_until, 'holder', user_id)
		    FROM exp
		)
		SELECT exp.id, exp.org_id, exp.event_id, exp.seat_id, exp.user_id, exp.status, exp.held_until, exp.created_at,
		       exp.extensions, exp.fence, exp.source, st.version, st.idx
		FROM exp JOIN st ON st.id = exp.seat_id`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hold, error) {
		var h Hold
		err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
			&h.Extensions, &h.Fence, &h.Source, &h.SeatVersion, &h.SeatIdx)
		h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
		return h, err
	})
}

// SetBlocked blocks an available seat (blocked=true) or unblocks a blocked
// one, returning the seat's new version.
func (s *Holds) SetBlocked(ctx context.Context, org, event, seat, actor uuid.UUID, blocked bool, reason string) (int64, error) {
	from, to, action := Available, Blocked, "seat.blocked"
	if !blocked {
		from, to, action = Blocked, Available, "seat.unblocked"
	}
	var version int64
	err := s.db.QueryRow(ctx, `
		WITH st AS (
		    UPDATE seats SET status = $5, version = version + 1, updated_at = now()
		    WHERE org_id = $1 AND event_id = $2 AND id = $3 AND status = $4
		    RETURNING id, version
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		    SELECT $1, $2, $6, $7, 'seat', id, id, jsonb_build_object('reason', $8::text) FROM st
		)
		SELECT version FROM st`, org, event, seat, from, to, actor, action, reason).Scan(&version)
	if !errors.Is(err, pgx.ErrNoRows) {
		return version, err
	}
	var status string
	err = s.db.QueryRow(ctx, `SELECT status FROM seats WHERE org_id = $1 AND event_id = $2 AND id = $3`,
		org, event, seat).Scan(&status)
	if err != nil {
		return 0, notFoundIfNoRows(err, "seat")
	}
	return 0, &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("seat is %s, not %s", status, from),
		Seats: []string{seat.String()}}
}

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// HoldStatus is a hold's state, as stored in seat_holds.status.
type HoldStatus string

// Hold statuses.
const (
	HoldActive    HoldStatus = "active"
	HoldConverted HoldStatus = "converted"
	HoldExpired   HoldStatus = "expired"
	HoldReleased  HoldStatus = "released"
)

// Hold is a row of seat_holds.
type Hold struct {
	ID         uuid.UUID
	OrgID      uuid.UUID
	EventID    uuid.UUID
	SeatID     uuid.UUID
	UserID     uuid.UUID
	Status     HoldStatus
	HeldUntil  time.Time
	CreatedAt  time.Time
	Extensions int
	Fence      int64
	Source     string
	// SeatVersion is the seat's version after the change that produced this
	// row (set by mutating methods; zero on plain reads).
	SeatVersion int64
	// SeatIdx is the seat's bitmap index (set by ReapExpired, whose caller
	// may not have the event cached).
	SeatIdx int
	// Customer is who a box-office hold is for (nil for a buyer's own).
	Customer *Customer
	// PaymentID is the payment the buyer is paying for the hold with
	// (uuid.Nil: none); such a hold is kept until the payment's deadline
	// and shown as paying. Set by the plain reads (holdColumns).
	PaymentID uuid.UUID
}

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
	// ShortWait bounds the transaction's row-lock waits at shortLockWait
	// instead of the pool's lock timeout: the Postgres-only path's defence
	// against a queue of buyers on one seat. A lock held longer (55P03)
	// answers the seats taken. The wait lets a request of several seats
	// through a row that a shared hold statement has locked for its few
	// milliseconds, instead of answering it taken while the seat may stay
	// free. It keeps a request of several seats, or under the orphan rule,
	// out of the shared transaction, whose row locks wait longer (see
	// Create).
	ShortWait bool
	// Cap is the most active holds the user may have for the event once
	// these are taken (0: no cap). It is checked in the statement that
	// takes the holds (see buyer_holds), where the event's own cap, if it
	// has one, replaces it.
	Cap int
	// Ceiling (0: none) bounds the cap whatever the event's own: a new
	// account's lower cap (hold.Actor.HoldCap). The statement takes the
	// lower of the two, so an event cap read from a lagging cache never
	// lifts it.
	Ceiling int
	// Staff holds outside the sales window (until the event is closed).
	Staff bool
	// Customer, when set, makes these box-office holds for a named
	// customer: the customer is written with the holds, in their
	// transaction, and a seat the user holds already for someone else is
	// taken, not theirs.
	Customer *Customer
	// Strict says the caller's cached settings have the event's orphan
	// rule strict (docs/architecture.md#choosing-seats), so the hold goes straight to a
	// transaction that reads the rule from the event row and, when it is
	// strict, refuses a hold that would leave a seat alone in its row,
	// with the rows locked. Postgres decides either way: the hold
	// statement refuses a hold that did not check a strict event's rule
	// (orphan_rule_met), and Holds.Create then checks it.
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

const holdColumns = `SELECT id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source,
	coalesce(payment_id, '00000000-0000-0000-0000-000000000000') FROM seat_holds`

// scanChangedHold reads a hold a statement changed, with its seat's new
// version: the columns of holdColumns but the payment, then the version.
func scanChangedHold(r pgx.CollectableRow) (Hold, error) {
	var h Hold
	err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
		&h.Extensions, &h.Fence, &h.Source, &h.SeatVersion)
	h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
	return h, err
}

func scanHold(r pgx.CollectableRow) (Hold, error) {
	var h Hold
	err := r.Scan(&h.ID, &h.OrgID, &h.EventID, &h.SeatID, &h.UserID, &h.Status, &h.HeldUntil, &h.CreatedAt,
		&h.Extensions, &h.Fence, &h.Source, &h.PaymentID)
	h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
	return h, err
}

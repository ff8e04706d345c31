// Package store owns seatd's SQL. Every method takes the organization and
// filters by it; nothing here knows about HTTP, Redis or caches.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// Store is seatd's storage: one sub-store for each kind of thing stored,
// all on one pool. Consumers take the sub-store they use.
type Store struct {
	Accounts *Accounts
	Charts   *Charts
	Events   *Events
	Holds    *Holds
	Bookings *Bookings
	Waitlist *Waitlist
	Webhooks *Webhooks
	Feed     *Feed
	Audit    *Audit

	shared *shared
}

// shared is what the sub-stores share: the pool and the hold batchers. A
// sub-store reaches another's unexported helpers through it.
type shared struct {
	db       *pgxpool.Pool
	batch    *holdBatcher // nil: every hold has its own statement
	together *holdBatcher // nil: every hold of several seats has its own transaction
	keys     keyBatches   // keyed hold requests' claims and finishes

	// betweenReadAndWrite, set by tests only, runs in a shared hold
	// transaction after its reads and before its hold statement.
	betweenReadAndWrite func()
}

// Accounts stores organizations, users, sessions and API keys.
type Accounts struct{ *shared }

// Charts stores venue charts and their versions.
type Charts struct{ *shared }

// Events stores events with their sections, seats and settings, and the
// figures read from them: occupancy, snapshots, paid revenue, exports.
type Events struct{ *shared }

// Holds stores hold writes: creating holds (alone or in the shared
// statements of the hold batchers), releasing, extending, reaping and
// blocking, keyed hold requests, and reads of active holds.
type Holds struct{ *shared }

// Bookings stores purchases, box-office sales, cancellations and house
// seats.
type Bookings struct{ *shared }

// Waitlist stores waitlist entries and the offers made to them.
type Waitlist struct{ *shared }

// Webhooks stores webhook endpoints and the delivery outbox.
type Webhooks struct{ *shared }

// Feed reads the change feed: an event's snapshot with its cursor, and the
// changes since a cursor.
type Feed struct{ *shared }

// Audit reads the audit log, buyer activity and the staff's pages of
// active holds.
type Audit struct{ *shared }

// New returns a Store on pool.
func New(db *pgxpool.Pool) *Store {
	sh := &shared{db: db, keys: newKeyBatches(db)}
	return &Store{
		Accounts: &Accounts{sh},
		Charts:   &Charts{sh},
		Events:   &Events{sh},
		Holds:    &Holds{sh},
		Bookings: &Bookings{sh},
		Waitlist: &Waitlist{sh},
		Webhooks: &Webhooks{sh},
		Feed:     &Feed{sh},
		Audit:    &Audit{sh},
		shared:   sh,
	}
}

// InTx runs fn in a transaction, committing when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return inTx(ctx, s.shared.db, fn)
}

// inTx runs fn in a transaction on db, committing when fn returns nil.
func inTx(ctx context.Context, db *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Ping checks that Postgres answers. It also pings the shared holds' own
// idle connections, so that one which broke while Postgres was away is
// dropped by its pool (a failed ping closes it) and the next batch dials
// afresh instead of sending on it and not knowing whether its holds were
// made. Only idle ones: those pools have a connection or two, busy with
// the holds, and a readiness probe that waited its turn behind them took
// most of a second after a Postgres restart while holds flowed (a busy
// connection finds out for itself).
func (s *Store) Ping(ctx context.Context) error {
	sh := s.shared
	err := sh.db.Ping(ctx)
	if sh.batch == nil {
		return err
	}
	for _, db := range []*pgxpool.Pool{sh.batch.db, sh.together.db} {
		if db == sh.db {
			continue
		}
		for _, c := range db.AcquireAllIdle(ctx) {
			_ = c.Ping(ctx)
			c.Release()
		}
	}
	return err
}

// SeatStatus is a seat's state, as stored in seats.status. pgx scans and
// encodes it as text; JSON shows the plain string.
type SeatStatus string

// Seat statuses.
const (
	Available SeatStatus = "available"
	Held      SeatStatus = "held"
	Sold      SeatStatus = "sold"
	Blocked   SeatStatus = "blocked"
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

// Org is a tenant.
type Org struct {
	ID   uuid.UUID
	Slug string
	Name string
}

// User is an account of one organization.
type User struct {
	ID           uuid.UUID
	OrgID        uuid.UUID
	Email        string
	Role         string
	PasswordHash string
}

// Event is a show with a seated venue.
type Event struct {
	ID    uuid.UUID
	OrgID uuid.UUID
	EventSpec
	Status         EventStatus
	ChartVersionID uuid.UUID // zero for events not made from a chart
	Seats          int
	// Categories are the event's price categories in chart order (read by
	// Event, not by Events).
	Categories []Category
}

// EventStatus is an event's place in its lifecycle.
type EventStatus string

// Event statuses: a draft is being prepared; on sale, buyers hold inside
// the sales window; closed, nobody holds.
const (
	EventDraft  EventStatus = "draft"
	EventOnSale EventStatus = "on_sale"
	EventClosed EventStatus = "closed"
	// EventDeleted is a draft its organizer deleted (DeleteEvent): the
	// event reads leave it out, so it is not found.
	EventDeleted EventStatus = "deleted"
)

// EventSpec is what an organizer sets on an event.
type EventSpec struct {
	Name     string
	Venue    string
	StartsAt time.Time
	TimeZone string // IANA name; pages show the event's times in it
	// OnSaleAt and SalesEndAt bound the sales window (nil: unbounded).
	OnSaleAt, SalesEndAt *time.Time
	// HoldTTL, MaxHoldsPerBuyer and HoldExtension (how long a checkout
	// extends a hold) override the global defaults (0: the default).
	HoldTTL             time.Duration
	MaxHoldsPerBuyer    int
	HoldExtension       time.Duration
	OrphanRule          string
	AccessibleReleaseAt *time.Time
}

// Category is a price category of an event.
type Category struct {
	Key        string
	Name       string
	Color      string
	PriceMinor int64
	Currency   string
}

// Price is the price of a category.
type Price struct {
	Category   string
	PriceMinor int64
	Currency   string
}

// Section groups seats of an event.
type Section struct {
	ID       uuid.UUID
	Label    string
	Name     string
	Position int
	Kind     string // seated or ga
	Capacity int    // places of a GA section (it has no seats)
}

// Seat is a seat with its current state and, when held, its active hold.
type Seat struct {
	ID        uuid.UUID
	SectionID uuid.UUID
	Row       string
	Number    int
	Idx       int
	X, Y      int
	Status    SeatStatus
	Version   int64
	Fence     int64
	HoldID    uuid.UUID // zero unless held
	HolderID  uuid.UUID // zero unless held
	HeldUntil time.Time // zero unless held
	// Category is the seat's price category key ("" for none).
	Category   string
	Accessible bool
	Companion  bool
}

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
}

func notFoundIfNoRows(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.E(apperr.NotFound, "%s not found", what)
	}
	return err
}

// CreateOrg inserts an organization.
func (s *Accounts) CreateOrg(ctx context.Context, slug, name string) (Org, error) {
	o := Org{Slug: slug, Name: name}
	err := s.db.QueryRow(ctx,
		`INSERT INTO organizations (slug, name) VALUES ($1, $2) RETURNING id`, slug, name).Scan(&o.ID)
	if pg.IsUniqueViolation(err) {
		return Org{}, apperr.E(apperr.Conflict, "organization %q exists already", slug)
	}
	if pg.IsInvalidInput(err) {
		return Org{}, apperr.E(apperr.Invalid, "organization slug %q is not valid", slug)
	}
	return o, err
}

// OrgBySlug finds an organization by its slug.
func (s *Accounts) OrgBySlug(ctx context.Context, slug string) (Org, error) {
	o := Org{Slug: slug}
	err := s.db.QueryRow(ctx, `SELECT id, name FROM organizations WHERE slug = $1`, slug).Scan(&o.ID, &o.Name)
	return o, notFoundIfNoRows(err, "organization")
}

// OrgByID finds an organization by id.
func (s *Accounts) OrgByID(ctx context.Context, id uuid.UUID) (Org, error) {
	o := Org{ID: id}
	err := s.db.QueryRow(ctx, `SELECT slug, name FROM organizations WHERE id = $1`, id).Scan(&o.Slug, &o.Name)
	return o, notFoundIfNoRows(err, "organization")
}

// CreateUser inserts a user; the email must already be normalized.
func (s *Accounts) CreateUser(ctx context.Context, org uuid.UUID, email, role, passwordHash string) (User, error) {
	u := User{OrgID: org, Email: email, Role: role, PasswordHash: passwordHash}
	err := s.db.QueryRow(ctx,
		`INSERT INTO users (org_id, email, role, password_hash) VALUES ($1, $2, $3, $4) RETURNING id`,
		org, email, role, passwordHash).Scan(&u.ID)
	if pg.IsUniqueViolation(err) {
		return User{}, &apperr.Error{Code: apperr.Conflict, Message: "an account with this email exists already",
			Fields: map[string]string{"email": "is already registered"}}
	}
	if pg.IsInvalidInput(err) {
		return User{}, apperr.E(apperr.Invalid, "user is not valid")
	}
	return u, err
}

// UserByEmail finds a user of org by email.
func (s *Accounts) UserByEmail(ctx context.Context, org uuid.UUID, email string) (User, error) {
	return userByEmail(ctx, s.db, org, email)
}

func userByEmail(ctx context.Context, db pg.DBTX, org uuid.UUID, email string) (User, error) {
	u := User{OrgID: org, Email: email}
	err := db.QueryRow(ctx,
		`SELECT id, role, password_hash FROM users WHERE org_id = $1 AND email = $2`, org, email).
		Scan(&u.ID, &u.Role, &u.PasswordHash)
	return u, notFoundIfNoRows(err, "user")
}

// UserByID finds a user of org by id.
func (s *Accounts) UserByID(ctx context.Context, org, id uuid.UUID) (User, error) {
	u := User{OrgID: org, ID: id}
	err := s.db.QueryRow(ctx,
		`SELECT email, role, password_hash FROM users WHERE org_id = $1 AND id = $2`, org, id).
		Scan(&u.Email, &u.Role, &u.PasswordHash)
	return u, notFoundIfNoRows(err, "user")
}

// eventColumns selects events (e) as scanEvent reads them.
const eventColumns = `
		SELECT e.id, e.name, e.venue, e.starts_at, e.time_zone, e.on_sale_at, e.sales_end_at, e.hold_ttl_seconds,
		       e.max_holds_per_buyer, e.orphan_rule, e.accessible_release_at, e.hold_extension_seconds, e.status, e.chart_version_id,
		       (SELECT count(*) FROM seats s WHERE s.org_id = e.org_id AND s.event_id = e.id)
		FROM events e`

func scanEvent(r pgx.Row, org uuid.UUID) (Event, error) {
	e := Event{OrgID: org}
	var ttl, maxHolds, extension *int32
	var chartVersion *uuid.UUID
	err := r.Scan(&e.ID, &e.Name, &e.Venue, &e.StartsAt, &e.TimeZone, &e.OnSaleAt, &e.SalesEndAt, &ttl,
		&maxHolds, &e.OrphanRule, &e.AccessibleReleaseAt, &extension, &e.Status, &chartVersion, &e.Seats)
	if ttl != nil {
		e.HoldTTL = time.Duration(*ttl) * time.Second
	}
	if extension != nil {
		e.HoldExtension = time.Duration(*extension) * time.Second
	}
	if maxHolds != nil {
		e.MaxHoldsPerBuyer = int(*maxHolds)
	}
	if chartVersion != nil {
		e.ChartVersionID = *chartVersion
	}
	e.StartsAt = e.StartsAt.UTC()
	for _, t := range []*time.Time{e.OnSaleAt, e.SalesEndAt, e.AccessibleReleaseAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return e, err
}

// List lists the events of org, soonest first.
func (s *Events) List(ctx context.Context, org uuid.UUID) ([]Event, error) {
	rows, err := s.db.Query(ctx, eventColumns+` WHERE e.org_id = $1 AND e.status <> 'deleted' ORDER BY e.starts_at, e.name`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) { return scanEvent(r, org) })
}

// Event finds one event of org, with its categories.
func (s *Events) Event(ctx context.Context, org, id uuid.UUID) (Event, error) {
	return event(ctx, s.db, org, id, "")
}

func event(ctx context.Context, db pg.DBTX, org, id uuid.UUID, lock string) (Event, error) {
	e, err := scanEvent(db.QueryRow(ctx, eventColumns+` WHERE e.org_id = $1 AND e.id = $2 AND e.status <> 'deleted' `+lock, org, id), org)
	if err != nil {
		return Event{}, notFoundIfNoRows(err, "event")
	}
	rows, err := db.Query(ctx, `
		SELECT key, name, color, price_minor, currency FROM event_categories
		WHERE org_id = $1 AND event_id = $2 ORDER BY position, key`, org, id)
	if err != nil {
		return Event{}, err
	}
	e.Categories, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Category])
	return e, err
}

// SaleEvent is an event on sale (or about to be) with its seat count.
type SaleEvent struct {
	Org, ID uuid.UUID
	Until   time.Time // when its sale ends
	Seats   int
}

// OnSale lists, across organizations, the published events whose
// sale has not ended at now, soonest end first, at most limit. A sale ends
// at sales_end_at, or when the event starts if it has none.
func (s *Events) OnSale(ctx context.Context, now time.Time, limit int) ([]SaleEvent, error) {
	// Seats are numbered 0..n-1: the top of the (org_id, event_id, idx)
	// index counts them without scanning.
	rows, err := s.db.Query(ctx, `
		SELECT e.org_id, e.id, coalesce(e.sales_end_at, e.starts_at),
		       coalesce((SELECT max(s.idx) + 1 FROM seats s WHERE s.org_id = e.org_id AND s.event_id = e.id), 0)
		FROM events e WHERE e.status = 'on_sale' AND coalesce(e.sales_end_at, e.starts_at) > $1
		ORDER BY coalesce(e.sales_end_at, e.starts_at), e.id LIMIT $2`, now, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SaleEvent, error) {
		var e SaleEvent
		err := r.Scan(&e.Org, &e.ID, &e.Until, &e.Seats)
		return e, err
	})
}

// Settings reads one event of org with its categories but without
// counting its seats (Event does, a scan of them all): what the hot cache
// keeps of an event it loads.
func (s *Events) Settings(ctx context.Context, org, id uuid.UUID) (Event, error) {
	es, err := s.ByKey(ctx, []uuid.UUID{org}, []uuid.UUID{id})
	if err != nil {
		return Event{}, err
	}
	if len(es) == 0 {
		return Event{}, notFoundIfNoRows(pgx.ErrNoRows, "event")
	}
	return es[0], nil
}

// Sections lists an event's sections in display order.
func (s *Events) Sections(ctx context.Context, org, event uuid.UUID) ([]Section, error) {
	return sections(ctx, s.db, org, event)
}

func sections(ctx context.Context, db pg.DBTX, org, event uuid.UUID) ([]Section, error) {
	rows, err := db.Query(ctx, `
		SELECT id, label, name, position, kind, capacity FROM sections WHERE org_id = $1 AND event_id = $2 ORDER BY position, label`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Section, error) {
		var x Section
		err := r.Scan(&x.ID, &x.Label, &x.Name, &x.Position, &x.Kind, &x.Capacity)
		return x, err
	})
}

// seatColumns selects seats (s) with their active hold, as scanSeat reads them.
const seatColumns = `
		SELECT s.id, s.section_id, s.row_label, s.number, s.idx, s.x, s.y, s.status, s.version, s.fence,
		       h.id, h.user_id, h.held_until, coalesce(s.category, ''), s.accessible, s.companion
		FROM seats s LEFT JOIN LATERAL (` + seatHoldSQL + `) h ON h.status = 'active'`

// seatHoldSQL is the hold seat s names, for a LEFT JOIN LATERAL whose ON
// keeps it only while active: one probe of seat_holds' primary key per
// seat, whatever the statistics say. Statistics from before a sale say
// there are almost no active holds, and the planner believed them: as a
// plain join it compared every seat with every active hold of the
// organization (9.4 s for an event of 4 000 seats at 38 000 active holds),
// and with the status filter inside it walked the whole partial index of
// active holds for every seat. Here no partial index applies, and the
// LIMIT (a hold id names one hold) keeps the subquery from being
// flattened back into a join the planner may plan either way.
const seatHoldSQL = `
		SELECT h.id, h.user_id, h.held_until, h.status FROM seat_holds h
		WHERE h.org_id = s.org_id AND h.id = s.hold_id LIMIT 1`

// Seats loads every seat of an event with its current hold, in idx
// order.
func (s *Events) Seats(ctx context.Context, org, event uuid.UUID) ([]Seat, error) {
	rows, err := s.db.Query(ctx, seatColumns+`
		WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSeat)
}

// SeatsByID returns the listed seats of an event in idx order.
func (s *Events) SeatsByID(ctx context.Context, org, event uuid.UUID, ids []uuid.UUID) ([]Seat, error) {
	rows, err := s.db.Query(ctx, seatColumns+`
		WHERE s.org_id = $1 AND s.event_id = $2 AND s.id = ANY($3::uuid[]) ORDER BY s.idx`, org, event, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSeat)
}

func scanSeat(r pgx.CollectableRow) (Seat, error) {
	var x Seat
	var holdID, holderID *uuid.UUID
	var until *time.Time
	err := r.Scan(&x.ID, &x.SectionID, &x.Row, &x.Number, &x.Idx, &x.X, &x.Y, &x.Status, &x.Version, &x.Fence,
		&holdID, &holderID, &until, &x.Category, &x.Accessible, &x.Companion)
	if holdID != nil {
		x.HoldID = *holdID
	}
	if holderID != nil {
		x.HolderID = *holderID
	}
	if until != nil {
		x.HeldUntil = until.UTC()
	}
	return x, err
}

package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/pg"
)

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
	// EventDeleted is a draft its organizer deleted (Events.Delete): the
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
	// WaitingRoom is the line in front of the seat map
	// (docs/waiting-room.md).
	WaitingRoom WaitingRoom
	// BuyerCancelHours lets buyers cancel their own paid bookings, refunded,
	// until that many hours before the start (nil: they cannot).
	BuyerCancelHours *int
}

// WaitingRoom is an event's waiting room as its organizer set it.
type WaitingRoom struct {
	Enabled bool `json:"enabled"`
	// OpensAt is the opening: visitors who join before it get places
	// drawn at random at it. Required when Enabled.
	OpensAt *time.Time `json:"opens_at,omitempty"`
	// RatePerMinute is the visitors let through a minute; 0: automatic,
	// as fast as the hold latency allows.
	RatePerMinute int `json:"rate_per_minute"`
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

// eventColumns selects events (e) as scanEvent reads them.
const eventColumns = `
		SELECT e.id, e.name, e.venue, e.starts_at, e.time_zone, e.on_sale_at, e.sales_end_at, e.hold_ttl_seconds,
		       e.max_holds_per_buyer, e.orphan_rule, e.accessible_release_at, e.hold_extension_seconds, e.buyer_cancel_hours, e.status,
		       e.chart_version_id, e.waiting_room, e.seat_count
		FROM events e`

func scanEvent(r pgx.Row, org uuid.UUID) (Event, error) {
	e := Event{OrgID: org}
	var ttl, maxHolds, extension, cancelHours *int32
	var chartVersion *uuid.UUID
	var room []byte
	err := r.Scan(&e.ID, &e.Name, &e.Venue, &e.StartsAt, &e.TimeZone, &e.OnSaleAt, &e.SalesEndAt, &ttl,
		&maxHolds, &e.OrphanRule, &e.AccessibleReleaseAt, &extension, &cancelHours, &e.Status, &chartVersion, &room, &e.Seats)
	if err == nil && room != nil {
		err = json.Unmarshal(room, &e.WaitingRoom)
	}
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
	if cancelHours != nil {
		h := int(*cancelHours)
		e.BuyerCancelHours = &h
	}
	e.StartsAt = e.StartsAt.UTC()
	for _, t := range []*time.Time{e.OnSaleAt, e.SalesEndAt, e.AccessibleReleaseAt, e.WaitingRoom.OpensAt} {
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
	rows, err := s.db.Query(ctx, `
		SELECT e.org_id, e.id, coalesce(e.sales_end_at, e.starts_at), e.seat_count
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

// OpenWaitingRoom is an on-sale event whose waiting room is on.
type OpenWaitingRoom struct {
	Org, Event uuid.UUID
	Room       WaitingRoom
}

// OpenWaitingRooms lists, across organizations, the on-sale events whose
// waiting room is on (at most 1000: the admitter's round).
func (s *Events) OpenWaitingRooms(ctx context.Context) ([]OpenWaitingRoom, error) {
	rows, err := s.db.Query(ctx, `
		SELECT org_id, id, waiting_room FROM events
		WHERE (waiting_room ->> 'enabled')::boolean AND status = 'on_sale'
		ORDER BY org_id, id LIMIT 1000`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (OpenWaitingRoom, error) {
		var o OpenWaitingRoom
		var room []byte
		if err := r.Scan(&o.Org, &o.Event, &room); err != nil {
			return o, err
		}
		return o, json.Unmarshal(room, &o.Room)
	})
}

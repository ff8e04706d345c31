package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/query"
)

// EventCore is what the event routes ask of the hold core; *hold.Events
// satisfies it.
type EventCore interface {
	Create(ctx context.Context, a hold.Actor, in hold.EventInput) (store.Event, error)
	Update(ctx context.Context, a hold.Actor, id uuid.UUID, in hold.EventInput) (store.Event, error)
	Delete(ctx context.Context, a hold.Actor, id uuid.UUID) error
	Settings(ctx context.Context, a hold.Actor, event uuid.UUID) (store.Event, error)
	Seats(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Section, []store.Seat, error)
	Prices(ctx context.Context, a hold.Actor, event uuid.UUID) (map[string]store.Category, error)
	SeatsVersion(ctx context.Context, a hold.Actor, event uuid.UUID) (int64, error)
}

// VisibleEvents reads the events the actor may see; *query.Events
// satisfies it.
type VisibleEvents interface {
	Event(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Event, error)
	List(ctx context.Context, a hold.Actor) ([]store.Event, error)
}

// Blocker blocks and unblocks seats; *hold.Holds satisfies it.
type Blocker interface {
	SetBlocked(ctx context.Context, a hold.Actor, event, seat uuid.UUID, blocked bool, reason string) (int64, error)
}

// Events answers events and their seats, and lets organizers create,
// change and delete events and staff block seats.
type Events struct {
	dec     *httpx.Decoder
	core    EventCore
	visible VisibleEvents
	blocker Blocker
	// seats keeps the seat list's answers per event version.
	seats *seatsCache
}

type priceJSON struct {
	Category   string `json:"category"`
	Name       string `json:"name,omitempty"`
	Color      string `json:"color,omitempty"`
	PriceMinor int64  `json:"price_minor"`
	Currency   string `json:"currency"`
}

// EventJSON is an event as the API answers it.
type EventJSON struct {
	ID                  uuid.UUID         `json:"id"`
	Name                string            `json:"name"`
	Venue               string            `json:"venue"`
	StartsAt            time.Time         `json:"starts_at"`
	TimeZone            string            `json:"time_zone"`
	Status              store.EventStatus `json:"status"`
	OnSaleAt            *time.Time        `json:"on_sale_at"`
	SalesEndAt          *time.Time        `json:"sales_end_at"`
	ChartVersionID      *uuid.UUID        `json:"chart_version_id"`
	HoldTTL             *int              `json:"hold_ttl"` // seconds; null: the default
	MaxHoldsPerBuyer    *int              `json:"max_holds_per_buyer"`
	HoldExtension       *int              `json:"hold_extension"` // seconds a checkout adds; null: the default
	OrphanRule          string            `json:"orphan_rule"`
	AccessibleReleaseAt *time.Time        `json:"accessible_release_at"`
	// BuyerCancelHours: buyers may cancel their paid bookings (refunded)
	// until this many hours before the start; null: they cannot.
	BuyerCancelHours *int             `json:"buyer_cancel_hours"`
	Prices           []priceJSON      `json:"prices,omitempty"`
	Seats            int              `json:"seats"`
	WaitingRoom      *waitingRoomJSON `json:"waiting_room"`
}

// waitingRoomJSON is an event's waiting room as the API answers it.
type waitingRoomJSON struct {
	Enabled bool       `json:"enabled"`
	OpensAt *time.Time `json:"opens_at"`
	// RatePerMinute is a number, or "auto".
	RatePerMinute any `json:"rate_per_minute"`
}

func waitingRoomView(w store.WaitingRoom) *waitingRoomJSON {
	if w == (store.WaitingRoom{}) {
		return nil
	}
	out := &waitingRoomJSON{Enabled: w.Enabled, OpensAt: w.OpensAt, RatePerMinute: "auto"}
	if w.RatePerMinute > 0 {
		out.RatePerMinute = w.RatePerMinute
	}
	return out
}

func eventView(e store.Event) EventJSON {
	out := EventJSON{ID: e.ID, Name: e.Name, Venue: e.Venue, StartsAt: e.StartsAt.UTC(), Seats: e.Seats,
		TimeZone: e.TimeZone, Status: e.Status, OnSaleAt: e.OnSaleAt, SalesEndAt: e.SalesEndAt, OrphanRule: e.OrphanRule,
		AccessibleReleaseAt: e.AccessibleReleaseAt, BuyerCancelHours: e.BuyerCancelHours, WaitingRoom: waitingRoomView(e.WaitingRoom)}
	if e.ChartVersionID != uuid.Nil {
		out.ChartVersionID = &e.ChartVersionID
	}
	if e.HoldTTL > 0 {
		n := int(e.HoldTTL.Seconds())
		out.HoldTTL = &n
	}
	if e.MaxHoldsPerBuyer > 0 {
		out.MaxHoldsPerBuyer = &e.MaxHoldsPerBuyer
	}
	if e.HoldExtension > 0 {
		n := int(e.HoldExtension.Seconds())
		out.HoldExtension = &n
	}
	for _, c := range e.Categories {
		out.Prices = append(out.Prices, priceJSON{Category: c.Key, Name: c.Name, Color: c.Color, PriceMinor: c.PriceMinor, Currency: c.Currency})
	}
	return out
}

// List answers the events of the session's organization.
func (h *Events) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "events", eventView)(h.visible.List(r.Context(), a))
}

// Get answers one event.
func (h *Events) Get(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	e, err := h.visible.Event(r.Context(), a, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, eventView(e))
	return nil
}

// eventInput is the body of POST and PATCH /api/v1/events: every field is
// optional here; the core says which a new event needs, and checks them
// all at once.
type eventInput struct {
	Name                *string      `json:"name"`
	Venue               *string      `json:"venue"`
	StartsAt            *string      `json:"starts_at"`
	TimeZone            *string      `json:"time_zone"`
	ChartID             *string      `json:"chart_id"`
	OnSaleAt            *string      `json:"on_sale_at"`
	SalesEndAt          *string      `json:"sales_end_at"`
	Prices              *[]priceJSON `json:"prices" validate:"omitnil,max=100"`
	HoldTTL             *int         `json:"hold_ttl"`
	MaxHoldsPerBuyer    *int         `json:"max_holds_per_buyer"`
	HoldExtension       *int         `json:"hold_extension"`
	OrphanRule          *string      `json:"orphan_rule"`
	AccessibleReleaseAt *string      `json:"accessible_release_at"`
	BuyerCancelHours    *int         `json:"buyer_cancel_hours"`
	Status              *string      `json:"status"`
	WaitingRoom         *struct {
		Enabled *bool   `json:"enabled"`
		OpensAt *string `json:"opens_at"`
		// RatePerMinute is a number or "auto"; anything else is refused
		// by the core with its field named.
		RatePerMinute json.RawMessage `json:"rate_per_minute"`
	} `json:"waiting_room"`
}

func (in eventInput) core() hold.EventInput {
	out := hold.EventInput{Name: in.Name, Venue: in.Venue, StartsAt: in.StartsAt, TimeZone: in.TimeZone, ChartID: in.ChartID,
		OnSaleAt: in.OnSaleAt, SalesEndAt: in.SalesEndAt, HoldTTLSeconds: in.HoldTTL, MaxHoldsPerBuyer: in.MaxHoldsPerBuyer,
		HoldExtensionSeconds: in.HoldExtension, OrphanRule: in.OrphanRule, AccessibleReleaseAt: in.AccessibleReleaseAt,
		BuyerCancelHours: in.BuyerCancelHours, Status: in.Status}
	if w := in.WaitingRoom; w != nil {
		out.WaitingRoom = &hold.WaitingRoomInput{Enabled: w.Enabled, OpensAt: w.OpensAt}
		if len(w.RatePerMinute) > 0 && string(w.RatePerMinute) != "null" {
			var auto string
			rate := string(w.RatePerMinute)
			if json.Unmarshal(w.RatePerMinute, &auto) == nil {
				rate = auto
			}
			out.WaitingRoom.RatePerMinute = &rate
		}
	}
	if in.Prices != nil {
		out.Prices = make([]store.Price, len(*in.Prices))
		for i, p := range *in.Prices {
			out.Prices[i] = store.Price{Category: p.Category, PriceMinor: p.PriceMinor, Currency: p.Currency}
		}
	}
	return out
}

// Create makes a draft event from a chart (organizer).
func (h *Events) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in eventInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	e, err := h.core.Create(r.Context(), a, in.core())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/events/"+e.ID.String())
	httpx.WriteJSON(w, http.StatusCreated, eventView(e))
	return nil
}

// Update changes an event's fields or status (organizer).
func (h *Events) Update(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in eventInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	e, err := h.core.Update(r.Context(), a, id, in.core())
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, eventView(e))
	return nil
}

// Delete deletes a draft nobody acted on (204); any other event is a
// conflict and stays as it is.
func (h *Events) Delete(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if err := h.core.Delete(r.Context(), a, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// SeatJSON is a seat of an event as the API answers it.
type SeatJSON struct {
	ID         uuid.UUID        `json:"id"`
	Section    string           `json:"section"`
	Row        string           `json:"row"`
	Number     int              `json:"number"`
	Status     store.SeatStatus `json:"status"`
	Version    int64            `json:"version"`
	X          int              `json:"x"`
	Y          int              `json:"y"`
	Category   string           `json:"category,omitempty"`
	PriceMinor *int64           `json:"price_minor,omitempty"`
	Currency   string           `json:"currency,omitempty"`
	Accessible bool             `json:"accessible"`
	Companion  bool             `json:"companion"`
}

// Seats answers every seat of an event from the hot cache. The answer is
// built once per seats version and prices and kept compressed (see
// seatsCache): a repeated read is answered from it, or 304 when the
// client's If-None-Match names it.
func (h *Events) Seats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if e, err := h.core.Settings(r.Context(), a, event); err != nil {
		return err
	} else if query.Hidden(a, e) {
		return query.ErrNoEvent
	}
	// The version before the seats: a change between the two is then in
	// the seats read, and only makes the next read build again.
	version, err := h.core.SeatsVersion(r.Context(), a, event)
	if err != nil {
		return err
	}
	prices, err := h.core.Prices(r.Context(), a, event)
	if err != nil {
		return err
	}
	ans, err := h.seats.get(event, seatsKey(version, prices), func() (any, error) {
		return h.seatList(r, a, event, prices)
	})
	if err != nil {
		return err
	}
	ans.serve(w, r)
	return nil
}

// seatList is the answer of Seats: {"seats": [...]}.
func (h *Events) seatList(r *http.Request, a hold.Actor, event uuid.UUID, prices map[string]store.Category) (any, error) {
	secs, seats, err := h.core.Seats(r.Context(), a, event)
	if err != nil {
		return nil, err
	}
	labels := make(map[uuid.UUID]string, len(secs))
	for _, sec := range secs {
		labels[sec.ID] = sec.Label
	}
	out := make([]SeatJSON, len(seats))
	for i, st := range seats {
		out[i] = SeatJSON{ID: st.ID, Section: labels[st.SectionID], Row: st.Row, Number: st.Number,
			Status: st.Status, Version: st.Version, X: st.X, Y: st.Y, Category: st.Category,
			Accessible: st.Accessible, Companion: st.Companion}
		if c, ok := prices[st.Category]; ok && st.Category != "" {
			out[i].PriceMinor, out[i].Currency = &c.PriceMinor, c.Currency
		}
	}
	return map[string]any{"seats": out}, nil
}

type blockInput struct {
	Reason string `json:"reason" validate:"max=500"`
}

// BlockJSON is a seat's state after it was blocked or unblocked.
type BlockJSON struct {
	SeatID  uuid.UUID        `json:"seat_id"`
	Status  store.SeatStatus `json:"status"`
	Version int64            `json:"version"`
}

// Block blocks an available seat (staff).
func (h *Events) Block(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return h.setBlocked(w, r, a, true)
}

// Unblock puts a blocked seat back on sale (staff).
func (h *Events) Unblock(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return h.setBlocked(w, r, a, false)
}

// setBlocked blocks an available seat or unblocks a blocked one; 409 when
// the seat is in another state.
func (h *Events) setBlocked(w http.ResponseWriter, r *http.Request, a hold.Actor, blocked bool) error {
	ids, err := httpx.PathIDs(r, "event", "seat")
	if err != nil {
		return err
	}
	event, seat := ids[0], ids[1]
	var in blockInput
	if err := h.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	version, err := h.blocker.SetBlocked(r.Context(), a, event, seat, blocked, in.Reason)
	if err != nil {
		return err
	}
	status := store.Available
	if blocked {
		status = store.Blocked
	}
	httpx.WriteJSON(w, http.StatusOK, BlockJSON{SeatID: seat, Status: status, Version: version})
	return nil
}

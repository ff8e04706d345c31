package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/query"
)

// HoldCore is what the buying routes ask of the hold core; *hold.Holds
// satisfies it.
type HoldCore interface {
	Hold(ctx context.Context, a hold.Actor, r hold.Request) (hold.Result, error)
	Mine(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	Release(ctx context.Context, a hold.Actor, holdID uuid.UUID, reason string) (store.Hold, error)
	Checkout(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	Purchase(ctx context.Context, a hold.Actor, event uuid.UUID, key string, holdIDs []uuid.UUID) (store.Booking, error)
}

// HoldLimit counts a user's hold requests; *ratelimit.Limiter satisfies
// it.
type HoldLimit interface {
	Hold(ctx context.Context, org, user uuid.UUID) error
}

// HoldPages reads pages of an event's active holds with their holders;
// *store.Audit satisfies it.
type HoldPages interface {
	ActiveHoldsPage(ctx context.Context, org, event uuid.UUID, f store.HoldFilter, after store.HoldCursor, limit int, total bool) (store.HoldPage, error)
}

// Holds holds seats, releases them, checks out and buys (buyers, and
// staff for a named customer), and lists an event's holds for staff.
type Holds struct {
	dec     *httpx.Decoder
	limits  HoldLimit
	core    HoldCore
	visible VisibleEvents
	pages   HoldPages
}

// HoldJSON is a hold as the API answers it.
type HoldJSON struct {
	ID        uuid.UUID        `json:"id"`
	SeatID    uuid.UUID        `json:"seat_id"`
	EventID   uuid.UUID        `json:"event_id"`
	UserID    *uuid.UUID       `json:"user_id,omitempty"` // staff views only
	HeldUntil time.Time        `json:"held_until"`
	Status    store.HoldStatus `json:"status"`
	Customer  *customerJSON    `json:"customer,omitempty"` // box-office holds
}

type customerJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Note  string `json:"note,omitempty"`
}

func customerView(c *store.Customer) *customerJSON {
	if c == nil {
		return nil
	}
	return &customerJSON{Name: c.Name, Email: c.Email, Note: c.Note}
}

func holdView(h store.Hold) HoldJSON {
	return HoldJSON{ID: h.ID, SeatID: h.SeatID, EventID: h.EventID, HeldUntil: h.HeldUntil.UTC(), Status: h.Status,
		Customer: customerView(h.Customer)}
}

// holdsView renders holds.
func holdsView(hs []store.Hold) map[string][]HoldJSON {
	out := make([]HoldJSON, len(hs))
	for i, h := range hs {
		out[i] = holdView(h)
	}
	return map[string][]HoldJSON{"holds": out}
}

// holdInput names one seat (seat_id) or several (seat_ids), not both; staff
// hold seat_ids for a named customer until held_until.
type holdInput struct {
	SeatID    string         `json:"seat_id" validate:"omitempty,id"`
	SeatIDs   *[]string      `json:"seat_ids" validate:"omitnil,min=1,max=100,unique,dive,id"`
	Customer  *customerInput `json:"customer"`
	HeldUntil *time.Time     `json:"held_until"`
	GA        *gaInput       `json:"ga"`
	// Best asks the core to choose the seats (docs/architecture.md#choosing-seats).
	Best *bestInput `json:"best_available"`
	// Accessible: the buyer needs accessible seating (held-back seats are
	// theirs to hold); WithCompanion adds an accessible seat's companion.
	Accessible    bool `json:"accessible"`
	WithCompanion bool `json:"with_companion"`
}

// gaInput asks for count places of a general-admission section.
type gaInput struct {
	Section string `json:"section" validate:"required,max=40"`
	Count   int    `json:"count" validate:"required,min=1,max=100"`
}

type bestInput struct {
	Count    int    `json:"count" validate:"min=1,max=100"`
	Category string `json:"category" validate:"max=40"`
	Section  string `json:"section" validate:"max=10"`
}

type customerInput struct {
	Name  string `json:"name" validate:"required,max=200"`
	Email string `json:"email" validate:"required,max=254"`
	Note  string `json:"note" validate:"max=1000"`
}

func (c customerInput) customer() store.Customer {
	return store.Customer{Name: c.Name, Email: c.Email, Note: c.Note}
}

// heldUntil is a customer hold's end, which staff must give.
func (in holdInput) heldUntil() (time.Time, error) {
	if in.HeldUntil == nil {
		return time.Time{}, &apperr.Error{Code: apperr.Invalid, Message: "say until when the seats are held for the customer",
			Fields: map[string]string{"held_until": "is required"}}
	}
	return *in.HeldUntil, nil
}

// forCustomer makes req a hold for the input's customer, if it names
// one, until the time it asks for.
func (in holdInput) forCustomer(req *hold.Request) error {
	if in.Customer == nil {
		return nil
	}
	until, err := in.heldUntil()
	if err != nil {
		return err
	}
	c := in.Customer.customer()
	req.Customer, req.Until = &c, until
	return nil
}

// seats returns the requested seat ids and whether one seat was asked for
// with seat_id (answered with a hold object rather than a list).
func (in holdInput) seats() (ids []uuid.UUID, single bool, err error) {
	switch {
	case in.SeatID != "" && in.SeatIDs != nil:
		return nil, false, &apperr.Error{Code: apperr.Invalid, Message: "give seat_id or seat_ids, not both",
			Fields: map[string]string{"seat_ids": "must not be given with seat_id"}}
	case in.SeatID != "":
		ids, err := httpx.BodyIDs("seat_id", []string{in.SeatID})
		return ids, true, err
	case in.SeatIDs != nil:
		ids, err := httpx.BodyIDs("seat_ids", *in.SeatIDs)
		return ids, false, err
	default:
		return nil, false, &apperr.Error{Code: apperr.Invalid, Message: "name the seat to hold",
			Fields: map[string]string{"seat_id": "is required"}}
	}
}

// Create holds seats for the buyer, or for a named customer when staff
// ask (docs/architecture.md#box-office-and-bookings): 201 when new, 200
// when they held them already.
func (h *Holds) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if err := h.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return err
	}
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in holdInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	if a.Staff() != (in.Customer != nil) {
		if a.Staff() {
			return apperr.E(apperr.Forbidden, "staff hold seats for a named customer: send customer and held_until")
		}
		return apperr.E(apperr.Forbidden, "only box-office staff can hold seats for a customer")
	}
	if in.Customer == nil && in.HeldUntil != nil {
		return &apperr.Error{Code: apperr.Invalid, Message: "held_until is for staff holding seats for a customer",
			Fields: map[string]string{"held_until": "is only allowed with customer"}}
	}
	if in.GA != nil {
		return h.holdGA(w, r, a, event, in)
	}
	var res hold.Result
	if in.Best != nil {
		if in.SeatID != "" || in.SeatIDs != nil || in.WithCompanion {
			return &apperr.Error{Code: apperr.Invalid, Message: "best_available chooses the seats: name none",
				Fields: map[string]string{"best_available": "must not be given with seat_id, seat_ids or with_companion"}}
		}
		key, err := httpx.OptionalIdempotencyKey(r)
		if err != nil {
			return err
		}
		req := hold.Request{Event: event, Best: &hold.Best{Count: in.Best.Count, Category: in.Best.Category, Section: in.Best.Section},
			Accessible: in.Accessible, Key: key, Source: hold.SourceAPI}
		if err := in.forCustomer(&req); err != nil {
			return err
		}
		res, err = h.core.Hold(r.Context(), a, req)
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, createdOrRepeated(res), holdsView(res.Holds))
		return nil
	}
	ids, single, err := in.seats()
	if err != nil {
		return err
	}
	req := hold.Request{Event: event, Seats: ids, Accessible: in.Accessible, WithCompanion: in.WithCompanion, Source: hold.SourceAPI}
	if in.Customer != nil {
		// Staff hold a customer's seats as they name them.
		req.Accessible, req.WithCompanion = false, false
		if err := in.forCustomer(&req); err != nil {
			return err
		}
	}
	res, err = h.core.Hold(r.Context(), a, req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	if single && len(res.Holds) == 1 {
		httpx.WriteJSON(w, status, holdView(res.Holds[0]))
	} else {
		httpx.WriteJSON(w, status, holdsView(res.Holds))
	}
	return nil
}

// holdGA holds places of a GA section for the buyer: 201 {holds}, one
// hold per place (so a place is released, bought and expires like a seat).
// Places are picked for the buyer, so a repeated request would hold more:
// with an Idempotency-Key header, a repeat answers 200 with the holds the
// first request made (422 when the key was used for another request).
func (h *Holds) holdGA(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, in holdInput) error {
	if in.SeatID != "" || in.SeatIDs != nil || in.Best != nil {
		return &apperr.Error{Code: apperr.Invalid, Message: "give ga or seats, not both",
			Fields: map[string]string{"ga": "must not be given with seat_id, seat_ids or best_available"}}
	}
	key, err := httpx.OptionalIdempotencyKey(r)
	if err != nil {
		return err
	}
	res, err := h.core.Hold(r.Context(), a, hold.Request{Event: event, GA: &hold.GA{Section: in.GA.Section, Count: in.GA.Count},
		Key: key, Source: hold.SourceAPI})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, createdOrRepeated(res), holdsView(res.Holds))
	return nil
}

// createdOrRepeated is a keyed hold's status: 201 for the request that
// held, 200 for a repeat answered with its holds.
func createdOrRepeated(res hold.Result) int {
	if res.Created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// Mine lists the buyer's own active holds for an event.
func (h *Holds) Mine(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return httpx.List(w, "holds", holdView)(h.core.Mine(r.Context(), a, event))
}

type releaseInput struct {
	Reason string `json:"reason" validate:"max=500"`
}

// Release ends a hold: its holder may, and staff of the org may with a
// reason for the audit log, as on the box-office page (422 without one; a
// buyer's reason is not kept).
func (h *Holds) Release(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "hold")
	if err != nil {
		return err
	}
	var in releaseInput
	if err := h.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	reason := ""
	if a.Staff() {
		reason = strings.TrimSpace(in.Reason)
		if reason == "" {
			return &apperr.Error{Code: apperr.Invalid, Message: "give a reason for releasing; it is kept in the audit log",
				Fields: map[string]string{"reason": "is required"}}
		}
	}
	if _, err := h.core.Release(r.Context(), a, id, reason); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Checkout extends the buyer's holds for the event (once each) and answers
// them with their new deadlines.
func (h *Holds) Checkout(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := idAndNoInput(h.dec, w, r, "event")
	if err != nil {
		return err
	}
	hs, err := h.core.Checkout(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, holdsView(hs))
	return nil
}

type purchaseInput struct {
	HoldIDs []string `json:"hold_ids" validate:"required,min=1,max=100,unique,dive,id"`
}

// Purchase turns the listed holds into a booking: 201 new, 200 replayed
// (same key and payload), 422 when the key was used for another payload.
func (h *Holds) Purchase(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in purchaseInput
	k, err := readKeyed(h.dec, w, r, &in)
	if err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("hold_ids", in.HoldIDs)
	if err != nil {
		return err
	}
	return writeBooking(w)(h.core.Purchase(r.Context(), a, k.event, k.key, ids))
}

// Pages of the staff hold list.
const (
	holdPageDefault = 100
	holdPageMax     = 500
)

// holdPageJSON is a page of an event's active holds; next is the cursor of
// the following page (the after parameter), null on the last page.
type holdPageJSON struct {
	Holds []HoldJSON `json:"holds"`
	Next  *string    `json:"next"`
}

// EventHolds lists an event's active holds with their holders (staff), a
// page at a time: ?limit= (1 to 500, default 100) and ?after= (the next
// cursor of the page before), soonest expiry first.
func (h *Holds) EventHolds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := holdPageDefault
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > holdPageMax {
			return &apperr.Error{Code: apperr.Invalid, Message: "limit must be a number from 1 to 500",
				Fields: map[string]string{"limit": "must be 1 to 500"}}
		}
		limit = n
	}
	after, err := query.DecodeHoldCursor(q.Get("after"))
	if err != nil {
		return err
	}
	if _, err := h.visible.Event(r.Context(), a, event); err != nil {
		return err
	}
	p, err := h.pages.ActiveHoldsPage(r.Context(), a.Org, event, store.HoldFilter{}, after, limit, false)
	if err != nil {
		return err
	}
	out := holdPageJSON{Holds: make([]HoldJSON, len(p.Holds))}
	for i, sh := range p.Holds {
		out.Holds[i] = holdView(sh.Hold)
		user := sh.UserID
		out.Holds[i].UserID = &user
	}
	if !p.Next.IsZero() {
		next := query.EncodeHoldCursor(p.Next)
		out.Next = &next
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

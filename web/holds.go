package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

type holdJSON struct {
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

func holdView(h store.Hold) holdJSON {
	return holdJSON{ID: h.ID, SeatID: h.SeatID, EventID: h.EventID, HeldUntil: h.HeldUntil.UTC(), Status: h.Status,
		Customer: customerView(h.Customer)}
}

// holdsView renders holds; withUser adds the holder (for staff).
func holdsView(hs []store.Hold, withUser bool) map[string][]holdJSON {
	out := make([]holdJSON, len(hs))
	for i, h := range hs {
		out[i] = holdView(h)
		if withUser {
			user := h.UserID
			out[i].UserID = &user
		}
	}
	return map[string][]holdJSON{"holds": out}
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

// createHold holds seats for the buyer, or for a named customer when staff
// ask (docs/architecture.md#box-office-and-bookings): 201 when new, 200
// when they held them already.
func (s *Server) createHold(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if err := s.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return err
	}
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in holdInput
	if err := s.dec.JSON(w, r, &in); err != nil {
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
		return s.holdGA(w, r, a, event, in)
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
		res, err = s.deps.Holds.Hold(r.Context(), a, req)
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, createdOrRepeated(res), holdsView(res.Holds, false))
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
	res, err = s.deps.Holds.Hold(r.Context(), a, req)
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
		httpx.WriteJSON(w, status, holdsView(res.Holds, false))
	}
	return nil
}

// holdGA holds places of a GA section for the buyer: 201 {holds}, one
// hold per place (so a place is released, bought and expires like a seat).
// Places are picked for the buyer, so a repeated request would hold more:
// with an Idempotency-Key header, a repeat answers 200 with the holds the
// first request made (422 when the key was used for another request).
func (s *Server) holdGA(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, in holdInput) error {
	if in.SeatID != "" || in.SeatIDs != nil || in.Best != nil {
		return &apperr.Error{Code: apperr.Invalid, Message: "give ga or seats, not both",
			Fields: map[string]string{"ga": "must not be given with seat_id, seat_ids or best_available"}}
	}
	key, err := httpx.OptionalIdempotencyKey(r)
	if err != nil {
		return err
	}
	res, err := s.deps.Holds.Hold(r.Context(), a, hold.Request{Event: event, GA: &hold.GA{Section: in.GA.Section, Count: in.GA.Count},
		Key: key, Source: hold.SourceAPI})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, createdOrRepeated(res), holdsView(res.Holds, false))
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

// myHolds lists the buyer's own active holds for an event.
func (s *Server) myHolds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return httpx.List(w, "holds", holdView)(s.deps.Holds.Mine(r.Context(), a, event))
}

type releaseInput struct {
	Reason string `json:"reason" validate:"max=500"`
}

// releaseHold ends a hold: its holder may, and staff of the org may with a
// reason for the audit log, as on the box-office page (422 without one; a
// buyer's reason is not kept).
func (s *Server) releaseHold(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "hold")
	if err != nil {
		return err
	}
	var in releaseInput
	if err := s.dec.OptionalJSON(w, r, &in); err != nil {
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
	if _, err := s.deps.Holds.Release(r.Context(), a, id, reason); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkout extends the buyer's holds for the event (once each) and answers
// them with their new deadlines.
func (s *Server) checkout(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in struct{}
	if err := s.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	hs, err := s.deps.Holds.Checkout(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, holdsView(hs, false))
	return nil
}

type purchaseInput struct {
	HoldIDs []string `json:"hold_ids" validate:"required,min=1,max=100,unique,dive,id"`
}

// purchase turns the listed holds into a booking: 201 new, 200 replayed
// (same key and payload), 422 when the key was used for another payload.
func (s *Server) purchase(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	key, err := httpx.IdempotencyKey(r)
	if err != nil {
		return err
	}
	var in purchaseInput
	if err := s.dec.JSON(w, r, &in); err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("hold_ids", in.HoldIDs)
	if err != nil {
		return err
	}
	b, err := s.deps.Holds.Purchase(r.Context(), a, event, key, ids)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if b.Replayed {
		status = http.StatusOK
	}
	httpx.WriteJSON(w, status, bookingView(b))
	return nil
}

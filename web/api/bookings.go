package api

import (
	"context"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// Bookings through the JSON API: sales at the counter, reading a booking,
// cancelling it, and house seats (docs/architecture.md#box-office-and-bookings).

// BoxOfficeCore is what the box office's routes ask of the hold core;
// *hold.BoxOffice satisfies it.
type BoxOfficeCore interface {
	Sell(ctx context.Context, a hold.Actor, event uuid.UUID, key string, holdIDs []uuid.UUID, payment string) (store.Booking, error)
	FindBookings(ctx context.Context, a hold.Actor, query string) ([]store.Booking, error)
	HouseSeats(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.HouseAllocation, error)
	CreateHouseSeats(ctx context.Context, a hold.Actor, event uuid.UUID, name string, seatIDs []uuid.UUID) (store.HouseAllocation, error)
	ReleaseHouseSeats(ctx context.Context, a hold.Actor, id uuid.UUID) (store.HouseAllocation, error)
}

// Cancellations is what cancelling a booking asks of the payment flow
// (*hold.Payments satisfies it): the cancellation, with the refund of a
// booking paid online, and the payment a booking's refunds are read from.
type Cancellations interface {
	Cancel(ctx context.Context, a hold.Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, *store.Refund, error)
	CancelMine(ctx context.Context, a hold.Actor, booking uuid.UUID) (store.Booking, *store.Refund, error)
	Get(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Payment, error)
}

// BookingReads reads the booking a request names; *query.Bookings
// satisfies it.
type BookingReads interface {
	FromPath(r *http.Request, a hold.Actor) (store.Booking, error)
}

// BoxOffice sells customer holds, reads, finds and cancels bookings, and
// keeps house seats.
type BoxOffice struct {
	dec      *httpx.Decoder
	core     BoxOfficeCore
	cancels  Cancellations
	bookings BookingReads
	tickets  *Tickets
}

type ticketJSON struct {
	ID     uuid.UUID `json:"id"`
	SeatID uuid.UUID `json:"seat_id"`
	Seat   string    `json:"seat,omitempty"`
	// Status is "valid" or "cancelled".
	Status      string     `json:"status"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	// PriceMinor and Currency are what was paid (absent for an unpriced
	// seat).
	PriceMinor *int64 `json:"price_minor,omitempty"`
	Currency   string `json:"currency,omitempty"`
	// Code is a live ticket's signed code (what its QR code says), in the
	// answer of GET /api/v1/bookings/{booking}; CheckedInAt when it got
	// in at the door.
	Code        string     `json:"code,omitempty"`
	CheckedInAt *time.Time `json:"checked_in_at,omitempty"`
}

// BookingJSON is a booking as the API answers it.
type BookingJSON struct {
	ID            uuid.UUID     `json:"id"`
	EventID       uuid.UUID     `json:"event_id"`
	Status        string        `json:"status"`
	Reference     string        `json:"reference"`
	Channel       string        `json:"channel"`
	PaymentMethod string        `json:"payment_method,omitempty"`
	Customer      *customerJSON `json:"customer,omitempty"`
	CreatedAt     time.Time     `json:"created_at"`
	CancelledAt   *time.Time    `json:"cancelled_at,omitempty"`
	CancelReason  string        `json:"cancel_reason,omitempty"`
	Tickets       []ticketJSON  `json:"tickets"`
	// PaymentID is the online payment that made the booking; PaidMinor
	// what it took (the tickets' prices); Refund the money given back for
	// its cancelled tickets (bookingRefund).
	PaymentID uuid.UUID   `json:"payment_id,omitzero"`
	PaidMinor *int64      `json:"paid_minor,omitempty"`
	Refund    *refundSums `json:"refund,omitempty"`
}

// refundSums is a paid booking's refunds in one: the latest one's status
// and the amount of those not failed or canceled.
type refundSums struct {
	Status      string `json:"status"`
	AmountMinor int64  `json:"amount_minor"`
	Currency    string `json:"currency"`
}

func bookingView(b store.Booking) BookingJSON {
	out := BookingJSON{ID: b.ID, EventID: b.EventID, Status: b.Status, Reference: store.FormatReference(b.Reference),
		Channel: b.Channel, PaymentMethod: b.PaymentMethod, Customer: customerView(b.Customer), CreatedAt: b.CreatedAt.UTC(),
		CancelReason: b.CancelReason, Tickets: make([]ticketJSON, len(b.Tickets))}
	if !b.CancelledAt.IsZero() {
		at := b.CancelledAt.UTC()
		out.CancelledAt = &at
	}
	if b.PaymentID != uuid.Nil {
		out.PaymentID = b.PaymentID
		var paid int64
		for _, t := range b.Tickets {
			paid += t.PriceMinor
		}
		out.PaidMinor = &paid
	}
	for i, t := range b.Tickets {
		out.Tickets[i] = ticketJSON{ID: t.ID, SeatID: t.SeatID, Seat: t.Seat, Status: "valid"}
		if t.Currency != "" {
			out.Tickets[i].PriceMinor, out.Tickets[i].Currency = &t.PriceMinor, t.Currency
		}
		if t.Cancelled() {
			at := t.CancelledAt.UTC()
			out.Tickets[i].Status, out.Tickets[i].CancelledAt = "cancelled", &at
		}
	}
	return out
}

type saleInput struct {
	HoldIDs       []string `json:"hold_ids" validate:"required,min=1,max=100,unique,dive,id"`
	PaymentMethod string   `json:"payment_method" validate:"required,oneof=cash card comp"`
}

// Sell turns customer holds into a booking paid at the counter: 201 new,
// 200 replayed (same key and payload), 422 when the key was used for
// another payload.
func (h *BoxOffice) Sell(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in saleInput
	k, err := readKeyed(h.dec, w, r, &in)
	if err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("hold_ids", in.HoldIDs)
	if err != nil {
		return err
	}
	return writeBooking(w)(h.core.Sell(r.Context(), a, k.event, k.key, ids, in.PaymentMethod))
}

// keyed is what a keyed booking request (a purchase, a sale) names: the
// event of its path and its Idempotency-Key.
type keyed struct {
	event uuid.UUID
	key   string
}

// readKeyed reads a keyed booking request: the {event} of the path, the
// Idempotency-Key header, and the JSON body into in.
func readKeyed(dec *httpx.Decoder, w http.ResponseWriter, r *http.Request, in any) (keyed, error) {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return keyed{}, err
	}
	key, err := httpx.IdempotencyKey(r)
	if err != nil {
		return keyed{}, err
	}
	return keyed{event: event, key: key}, dec.JSON(w, r, in)
}

// writeBooking answers a keyed booking request with the booking it made:
// 201 new, 200 replayed (same key and payload); the error as it is.
func writeBooking(w http.ResponseWriter) func(store.Booking, error) error {
	return func(b store.Booking, err error) error {
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
}

// Booking answers a booking — any of the org's for staff, a buyer's own —
// with its live tickets' codes and its admissions.
func (h *BoxOffice) Booking(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, err := h.bookings.FromPath(r, a)
	if err != nil {
		return err
	}
	out := bookingView(b)
	if err := h.tickets.annotate(r.Context(), b, &out); err != nil {
		return err
	}
	if out.Refund, err = h.refund(r.Context(), a, b); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// refund sums up the refunds of a booking paid online (nil for one not
// paid online, or not refunded).
func (h *BoxOffice) refund(ctx context.Context, a hold.Actor, b store.Booking) (*refundSums, error) {
	if b.PaymentID == uuid.Nil {
		return nil, nil
	}
	p, err := h.cancels.Get(ctx, a, b.PaymentID)
	if err != nil {
		return nil, err
	}
	var out *refundSums
	for _, r := range p.Refunds { // oldest first
		if r.BookingID != b.ID {
			continue
		}
		if out == nil {
			out = &refundSums{Currency: r.Currency}
		}
		out.Status = string(r.Status)
		if r.Status != store.RefundFailed && r.Status != store.RefundCanceled {
			out.AmountMinor += r.AmountMinor
		}
	}
	return out, nil
}

// Find finds the organization's bookings by reference (as people type
// it: "abcd-2345") or by email (the box-office customer's, or the buying
// account's): {bookings}, newest first, at most 50. Staff only.
func (h *BoxOffice) Find(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	q := r.URL.Query()
	ref, email := strings.TrimSpace(q.Get("reference")), strings.TrimSpace(q.Get("email"))
	var query string
	switch {
	case (ref == "") == (email == ""):
		return &apperr.Error{Code: apperr.Invalid, Message: "look bookings up by reference or by email, one of them",
			Fields: map[string]string{"reference": "give reference or email, not both"}}
	case ref != "":
		if query = store.NormalizeReference(ref); query == "" {
			return &apperr.Error{Code: apperr.Invalid, Message: "a booking reference is 8 letters and digits, XXXX-XXXX",
				Fields: map[string]string{"reference": "must be a booking reference"}}
		}
	default:
		if addr, err := mail.ParseAddress(email); err != nil || addr.Address != email || len(email) > 254 {
			return &apperr.Error{Code: apperr.Invalid, Message: "email must be an email address",
				Fields: map[string]string{"email": "must be an email address"}}
		}
		query = email
	}
	return httpx.List(w, "bookings", bookingView)(h.core.FindBookings(r.Context(), a, query))
}

type cancelInput struct {
	TicketIDs []string `json:"ticket_ids" validate:"omitempty,max=1000,unique,dive,id"`
	Reason    string   `json:"reason" validate:"required,max=500"`
}

// Cancel cancels a booking, whole or the listed tickets: 200 with the
// booking (cancelled or partially_cancelled). A booking paid online is
// refunded the cancelled tickets' prices through the payment provider
// (its refund in the answer).
func (h *BoxOffice) Cancel(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "booking")
	if err != nil {
		return err
	}
	var in cancelInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	var tickets []uuid.UUID
	if len(in.TicketIDs) > 0 {
		if tickets, err = httpx.BodyIDs("ticket_ids", in.TicketIDs); err != nil {
			return err
		}
	}
	b, _, err := h.cancels.Cancel(r.Context(), a, id, tickets, in.Reason)
	if err != nil {
		return err
	}
	out := bookingView(b)
	if out.Refund, err = h.refund(r.Context(), a, b); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// CancelMine cancels the buyer's own booking paid online, whole, refunded
// through the payment provider, while the event allows it (its
// buyer_cancel_hours before the start): 200 with the booking and its
// refund.
func (h *BoxOffice) CancelMine(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := idAndNoInput(h.dec, w, r, "booking")
	if err != nil {
		return err
	}
	b, _, err := h.cancels.CancelMine(r.Context(), a, id)
	if err != nil {
		return err
	}
	out := bookingView(b)
	if out.Refund, err = h.refund(r.Context(), a, b); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

type houseJSON struct {
	ID         uuid.UUID   `json:"id"`
	EventID    uuid.UUID   `json:"event_id"`
	Name       string      `json:"name"`
	SeatIDs    []uuid.UUID `json:"seat_ids"`
	Seats      []string    `json:"seats"`
	CreatedAt  time.Time   `json:"created_at"`
	ReleasedAt *time.Time  `json:"released_at,omitempty"`
}

func houseView(h store.HouseAllocation) houseJSON {
	out := houseJSON{ID: h.ID, EventID: h.EventID, Name: h.Name, SeatIDs: h.SeatIDs, Seats: h.Seats, CreatedAt: h.CreatedAt}
	if h.Released() {
		at := h.ReleasedAt
		out.ReleasedAt = &at
	}
	return out
}

// HouseSeats lists an event's house-seat allocations.
func (h *BoxOffice) HouseSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return httpx.List(w, "house_seats", houseView)(h.core.HouseSeats(r.Context(), a, event))
}

type houseInput struct {
	Name    string   `json:"name" validate:"required,max=100"`
	SeatIDs []string `json:"seat_ids" validate:"required,min=1,max=1000,unique,dive,id"`
}

// CreateHouseSeats names blocked seats as house seats: 201.
func (h *BoxOffice) CreateHouseSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in houseInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("seat_ids", in.SeatIDs)
	if err != nil {
		return err
	}
	alloc, err := h.core.CreateHouseSeats(r.Context(), a, event, in.Name, ids)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, houseView(alloc))
	return nil
}

// ReleaseHouseSeats puts every seat of an allocation on sale: 200.
func (h *BoxOffice) ReleaseHouseSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := idAndNoInput(h.dec, w, r, "allocation")
	if err != nil {
		return err
	}
	alloc, err := h.core.ReleaseHouseSeats(r.Context(), a, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, houseView(alloc))
	return nil
}

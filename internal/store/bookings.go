package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/pg"
)

// Booking statuses.
const (
	BookingConfirmed          = "confirmed"
	BookingPartiallyCancelled = "partially_cancelled"
	BookingCancelled          = "cancelled"
)

// Booking channels.
const (
	ChannelWeb       = "web"
	ChannelBoxOffice = "box_office"
)

// PaymentMethods are how the box office takes payment.
var PaymentMethods = []string{"cash", "card", "comp"}

// Customer is who a box-office hold or sale is for.
type Customer struct {
	Name  string
	Email string // lower case
	Note  string
}

// Booking is a purchase: tickets for seats that were held.
type Booking struct {
	ID        uuid.UUID
	OrgID     uuid.UUID
	EventID   uuid.UUID
	UserID    uuid.UUID
	Status    string
	CreatedAt time.Time
	// Reference is the short code people read out (8 characters, see
	// FormatReference).
	Reference string
	Channel   string
	// PaymentMethod and Customer are set for box-office sales.
	PaymentMethod string
	Customer      *Customer
	// UserEmail is the account that bought (web) or sold (box office).
	UserEmail    string
	CancelledAt  time.Time
	CancelReason string
	Tickets      []Ticket
	// Replayed is set when the booking was found by its idempotency key
	// rather than created by this call.
	Replayed bool
	// Sold are the seats sold by this call, with their new versions.
	Sold []SoldSeat
	// Offer is set when this call sold holds of a waitlist offer: the
	// offer's buyer sees it bought.
	Offer bool
	// PaymentID is the online payment that made the booking (uuid.Nil for
	// a purchase without one and a box-office sale).
	PaymentID uuid.UUID
}

// Ticket is one sold seat and what was paid for it (zero and "" for a
// seat without a price category).
type Ticket struct {
	ID         uuid.UUID
	SeatID     uuid.UUID
	HoldID     uuid.UUID
	PriceMinor int64
	Currency   string
	// Seat is the seat's label ("B-A-12"), set when read back; Place,
	// for a standing place, what people call it ("G place 94").
	Seat         string
	Place        string
	CancelledAt  time.Time
	CancelReason string
}

// Cancelled reports whether the ticket was cancelled.
func (t Ticket) Cancelled() bool { return !t.CancelledAt.IsZero() }

// PlaceLabel names a standing place for people: "G place 94". (Its
// canonical label, section-row-number, is what lookups read back.)
func PlaceLabel(section string, number int) string {
	return section + " place " + strconv.Itoa(number)
}

// SoldSeat is a seat that became sold (or, on a cancel, available again),
// with its new version.
type SoldSeat struct {
	SeatID  uuid.UUID
	HoldID  uuid.UUID
	Version int64
	// Prev is the seat's status before it was sold, when not held (a
	// paid seat sold after its hold lapsed was available).
	Prev SeatStatus
}

// FormatReference shows a reference as people read it: XXXX-XXXX.
func FormatReference(ref string) string {
	if len(ref) != 8 {
		return ref
	}
	return ref[:4] + "-" + ref[4:]
}

// NormalizeReference turns what someone typed ("abcd-efgh ") into the
// stored form, or "" when it cannot be a reference.
func NormalizeReference(s string) string {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
	if len(s) != 8 {
		return ""
	}
	for _, c := range s {
		if !strings.ContainsRune(referenceAlphabet, c) {
			return ""
		}
	}
	return s
}

// referenceAlphabet is booking_reference()'s (migration 006).
const referenceAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

const bookingColumns = `
	SELECT b.id, b.event_id, b.user_id, b.status, b.created_at, b.reference, b.channel, coalesce(b.payment_method, ''),
	       b.customer_name, b.customer_email, b.customer_note, coalesce(b.cancelled_at, 'epoch'::timestamptz),
	       coalesce(b.cancel_reason, ''), u.email, coalesce(b.payment_id, '00000000-0000-0000-0000-000000000000')
	FROM bookings b JOIN users u ON u.id = b.user_id AND u.org_id = b.org_id`

func scanBooking(r pgx.CollectableRow) (Booking, error) {
	var b Booking
	var name, email *string
	var note string
	err := r.Scan(&b.ID, &b.EventID, &b.UserID, &b.Status, &b.CreatedAt, &b.Reference, &b.Channel, &b.PaymentMethod,
		&name, &email, &note, &b.CancelledAt, &b.CancelReason, &b.UserEmail, &b.PaymentID)
	if name != nil && email != nil {
		b.Customer = &Customer{Name: *name, Email: *email, Note: note}
	}
	b.CreatedAt = b.CreatedAt.UTC()
	if b.CancelledAt.Unix() == 0 {
		b.CancelledAt = time.Time{}
	}
	b.CancelledAt = b.CancelledAt.UTC()
	return b, err
}

// ByID returns a booking of org with its tickets; with a user, only
// that user's (a buyer sees their own bookings only).
func (s *Bookings) ByID(ctx context.Context, org, user, id uuid.UUID) (Booking, error) {
	rows, err := s.db.Query(ctx, bookingColumns+`
		WHERE b.org_id = $1 AND b.id = $2 AND ($3::uuid IS NULL OR b.user_id = $3)`, org, id, nilIfZero(user))
	if err != nil {
		return Booking{}, err
	}
	b, err := pgx.CollectExactlyOneRow(rows, scanBooking)
	if err != nil {
		return Booking{}, notFoundIfNoRows(err, "booking")
	}
	b.OrgID = org
	b.Tickets, err = s.tickets(ctx, s.db, org, id)
	return b, err
}

func nilIfZero(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

func (s *Bookings) tickets(ctx context.Context, db pg.DBTX, org, booking uuid.UUID) ([]Ticket, error) {
	rows, err := db.Query(ctx, `
		SELECT t.id, t.seat_id, t.hold_id, sec.label || '-' || s.row_label || '-' || s.number,
		       coalesce(t.cancelled_at, 'epoch'::timestamptz), coalesce(t.cancel_reason, ''),
		       coalesce(t.price_minor, 0), coalesce(t.currency, ''), sec.label, s.number, sec.kind = $3
		FROM tickets t
		JOIN seats s ON s.id = t.seat_id AND s.org_id = t.org_id
		JOIN sections sec ON sec.id = s.section_id AND sec.org_id = s.org_id
		WHERE t.org_id = $1 AND t.booking_id = $2 ORDER BY sec.position, s.idx`, org, booking, chart.GA)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Ticket, error) {
		var t Ticket
		var section string
		var number int
		var standing bool
		err := r.Scan(&t.ID, &t.SeatID, &t.HoldID, &t.Seat, &t.CancelledAt, &t.CancelReason, &t.PriceMinor, &t.Currency,
			&section, &number, &standing)
		if standing {
			t.Place = PlaceLabel(section, number)
		}
		if t.CancelledAt.Unix() == 0 {
			t.CancelledAt = time.Time{}
		}
		t.CancelledAt = t.CancelledAt.UTC()
		return t, err
	})
}

// Cancel cancels the listed live tickets of a booking (all of its
// live tickets when none are listed) and makes their seats available, in
// one transaction: the booking becomes cancelled or partially cancelled,
// and each seat gets an audit row (booking.cancelled) the change feed
// carries to every process. It returns the booking as it now is and the
// freed seats with their new versions. A booking paid online is refused
// (Conflict): Payments.CancelBooking cancels it together with its refund.
func (s *Bookings) Cancel(ctx context.Context, org, booking, actor uuid.UUID, ticketIDs []uuid.UUID, reason string) (Booking, []SoldSeat, error) {
	var c cancellation
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		c, err = s.cancelTickets(ctx, tx, org, booking, actor, ticketIDs, reason, false)
		return err
	})
	if err != nil {
		return Booking{}, nil, err
	}
	b, err := s.ByID(ctx, org, uuid.Nil, booking)
	return b, c.freed, err
}

// cancellation is what cancelTickets did.
type cancellation struct {
	event, payment uuid.UUID // payment: uuid.Nil unless paid online
	freed          []SoldSeat
	tickets        []Ticket // the tickets cancelled, with their prices
}

// cancelTickets is Cancel's work in tx; paid says a booking paid online
// may be cancelled (its caller writes the refund in tx too).
func (s *Bookings) cancelTickets(ctx context.Context, tx pgx.Tx, org, booking, actor uuid.UUID, ticketIDs []uuid.UUID, reason string, paid bool) (cancellation, error) {
	var c cancellation
	var payment *uuid.UUID
	// The booking row lock puts cancels of one booking in a line.
	if err := tx.QueryRow(ctx, `SELECT event_id, payment_id FROM bookings WHERE org_id = $1 AND id = $2 FOR UPDATE`,
		org, booking).Scan(&c.event, &payment); err != nil {
		return c, notFoundIfNoRows(err, "booking")
	}
	if payment != nil {
		if !paid {
			return c, apperr.E(apperr.Conflict, "this booking was paid online: cancel it with its refund")
		}
		c.payment = *payment
	}
	ts, err := s.tickets(ctx, tx, org, booking)
	if err != nil {
		return c, err
	}
	var chosen []uuid.UUID
	for _, id := range ticketIDs {
		i := slices.IndexFunc(ts, func(t Ticket) bool { return t.ID == id })
		switch {
		case i < 0:
			return c, apperr.E(apperr.NotFound, "ticket %s is not part of this booking", id)
		case ts[i].Cancelled():
			return c, apperr.E(apperr.Conflict, "ticket for seat %s is already cancelled", ts[i].Seat)
		case slices.Contains(chosen, id):
			continue
		}
		chosen = append(chosen, id)
		c.tickets = append(c.tickets, ts[i])
	}
	if len(ticketIDs) == 0 {
		for _, t := range ts {
			if !t.Cancelled() {
				chosen = append(chosen, t.ID)
				c.tickets = append(c.tickets, t)
			}
		}
		if len(chosen) == 0 {
			return c, apperr.E(apperr.Conflict, "this booking is already cancelled")
		}
	}
	rows, err := tx.Query(ctx, `
		WITH l AS (
		    -- The tickets are locked in id order, as the door's admission
		    -- statement locks those it admits together (admitSQL), so
		    -- the two wait for each other rather than deadlock.
		    SELECT id FROM tickets
		    WHERE org_id = $1 AND booking_id = $2 AND id = ANY($3::uuid[]) AND cancelled_at IS NULL
		    ORDER BY id FOR UPDATE
		), t AS (
		    UPDATE tickets SET cancelled_at = now(), cancel_reason = $4
		    FROM l WHERE tickets.org_id = $1 AND tickets.id = l.id
		    RETURNING tickets.id, tickets.seat_id, tickets.hold_id
		), st AS (
		    UPDATE seats SET status = 'available', version = version + 1, updated_at = now()
		    FROM t WHERE seats.org_id = $1 AND seats.id = t.seat_id AND seats.status = 'sold'
		    RETURNING seats.id, seats.version, t.hold_id, t.id AS ticket_id
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		    SELECT $1, $5, $6, 'booking.cancelled', 'booking', $2, st.id,
		           jsonb_build_object('hold_id', st.hold_id, 'ticket_id', st.ticket_id, 'reason', $4::text, 'holder', b.user_id)
		    FROM st JOIN bookings b ON b.org_id = $1 AND b.id = $2
		)
		SELECT id, hold_id, version FROM st ORDER BY id`, org, booking, chosen, reason, c.event, actor)
	if err != nil {
		return c, err
	}
	c.freed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SoldSeat, error) {
		var x SoldSeat
		err := r.Scan(&x.SeatID, &x.HoldID, &x.Version)
		return x, err
	})
	if err != nil {
		return c, err
	}
	if len(c.freed) != len(chosen) {
		// Tickets are live only on sold seats; anything else is a bug.
		return c, fmt.Errorf("cancel: %d of %d seats freed", len(c.freed), len(chosen))
	}
	_, err = tx.Exec(ctx, `
		UPDATE bookings SET
		    status = CASE WHEN EXISTS (SELECT 1 FROM tickets WHERE org_id = $1 AND booking_id = $2 AND cancelled_at IS NULL)
		             THEN 'partially_cancelled' ELSE 'cancelled' END,
		    cancelled_at = now(), cancel_reason = $3, cancelled_by = $4
		WHERE org_id = $1 AND id = $2`, org, booking, reason, nilIfZero(actor))
	return c, err
}

// Find finds an org's bookings by reference (any spelling people
// type) or by email: the box-office customer's, or the buying account's.
// Newest first, at most 50.
func (s *Bookings) Find(ctx context.Context, org uuid.UUID, query string) ([]Booking, error) {
	query = strings.TrimSpace(query)
	ref, email := NormalizeReference(query), strings.ToLower(query)
	if ref == "" && !strings.Contains(email, "@") {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, bookingColumns+`
		WHERE b.org_id = $1 AND (b.reference = $2 OR b.customer_email = $3
		    OR (b.channel = 'web' AND b.user_id = (SELECT id FROM users WHERE org_id = $1 AND email = $3)))
		ORDER BY b.created_at DESC, b.id LIMIT 50`, org, ref, email)
	if err != nil {
		return nil, err
	}
	bs, err := pgx.CollectRows(rows, scanBooking)
	if err != nil {
		return nil, err
	}
	for i := range bs {
		bs[i].OrgID = org
		if bs[i].Tickets, err = s.tickets(ctx, s.db, org, bs[i].ID); err != nil {
			return nil, err
		}
	}
	return bs, nil
}

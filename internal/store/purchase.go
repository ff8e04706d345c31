package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// RequestHash fingerprints a purchase request so a reused idempotency key
// with a different payload can be told apart from a replay. extra is the
// rest of the payload (a sale's payment method), empty for a purchase.
func RequestHash(event uuid.UUID, holdIDs []uuid.UUID, extra string) string {
	ids := make([]string, len(holdIDs))
	for i, id := range holdIDs {
		ids[i] = id.String()
	}
	slices.Sort(ids)
	in := event.String() + "|" + strings.Join(ids, ",")
	if extra != "" {
		in += "|" + extra
	}
	sum := sha256.Sum256([]byte(in))
	return hex.EncodeToString(sum[:])
}

// Purchase converts the user's listed active holds into a booking with one
// ticket per seat, all or nothing. The idempotency key makes it safe to
// retry: the same key and payload return the first booking. With freeOnly
// a purchase of any seat that costs something (at the price its ticket
// would be sold at) writes nothing and answers ErrNotFree; a replay, and
// holds missing or lapsed, answer as without it.
func (s *Bookings) Purchase(ctx context.Context, org, event, user uuid.UUID, key string, holdIDs []uuid.UUID, freeOnly bool) (Booking, error) {
	return s.convert(ctx, conversion{org: org, event: event, user: user, key: key, holds: holdIDs, freeOnly: freeOnly})
}

// ErrNotFree refuses a free-only purchase (Purchase's freeOnly) of seats
// that cost something.
var ErrNotFree = errors.New("store: the purchase has seats that cost something")

// Sell converts box-office holds (holds with a customer, taken by any
// staff member of org) into a booking for their customer, paid by
// payment; the seller's idempotency key works as a buyer's does.
func (s *Bookings) Sell(ctx context.Context, org, event, seller uuid.UUID, key string, holdIDs []uuid.UUID, payment string) (Booking, error) {
	return s.convert(ctx, conversion{org: org, event: event, user: seller, key: key, holds: holdIDs, payment: payment})
}

// conversion is a purchase (payment empty: the user's own holds) or a
// box-office sale (the org's customer holds).
type conversion struct {
	org, event, user uuid.UUID
	key              string
	holds            []uuid.UUID
	payment          string
	freeOnly         bool
}

func (c conversion) sale() bool { return c.payment != "" }

// convert runs a conversion; a reference that collides with another
// booking's (one in a billion) is drawn again.
func (s *Bookings) convert(ctx context.Context, c conversion) (Booking, error) {
	for attempt := 0; ; attempt++ {
		b, err := s.convertOnce(ctx, c)
		if attempt < 3 && pg.IsUniqueViolationOf(err, "bookings_reference") {
			continue
		}
		return b, err
	}
}

func (s *Bookings) convertOnce(ctx context.Context, c conversion) (Booking, error) {
	hash := RequestHash(c.event, c.holds, c.payment)
	channel, payment := ChannelWeb, (*string)(nil)
	if c.sale() {
		channel, payment = ChannelBoxOffice, &c.payment
	}
	var b Booking
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		// The booking row goes first: a concurrent call with the same key
		// waits here on the unique index and then finds our booking. A
		// sale's customer is filled in below, from its holds, before the
		// row can be seen.
		err := tx.QueryRow(ctx, `
			INSERT INTO bookings (org_id, event_id, user_id, idempotency_key, request_hash)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (org_id, user_id, idempotency_key) DO NOTHING
			RETURNING id, created_at, reference`, c.org, c.event, c.user, c.key, hash).Scan(&b.ID, &b.CreatedAt, &b.Reference)
		if errors.Is(err, pgx.ErrNoRows) {
			b.Replayed = true
			return nil
		}
		if err != nil {
			return err
		}
		// A purchase takes the buyer's own holds; a sale any customer hold
		// of the org (a colleague may have taken it).
		rows, err := tx.Query(ctx, `
			SELECT h.id, h.seat_id, h.status, h.held_until > now(), h.source = $6, c.name, c.email, c.note
			FROM seat_holds h LEFT JOIN hold_customers c ON c.org_id = h.org_id AND c.hold_id = h.id
			WHERE h.org_id = $1 AND h.event_id = $2 AND h.id = ANY($4::uuid[]) AND ($5 OR h.user_id = $3)
			ORDER BY h.seat_id FOR UPDATE OF h`, c.org, c.event, c.user, c.holds, c.sale(), SourceWaitlist)
		if err != nil {
			return err
		}
		type row struct {
			id, seat uuid.UUID
			status   HoldStatus
			fresh    bool
			offer    bool
			customer *Customer
		}
		held, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			var name, email, note *string
			err := r.Scan(&x.id, &x.seat, &x.status, &x.fresh, &x.offer, &name, &email, &note)
			if name != nil {
				x.customer = &Customer{Name: *name, Email: *email, Note: *note}
			}
			return x, err
		})
		if err != nil {
			return err
		}
		if len(held) != len(c.holds) {
			return apperr.E(apperr.NotFound, "%d of the %d holds were not found", len(c.holds)-len(held), len(c.holds))
		}
		for _, h := range held {
			if h.status != HoldActive || !h.fresh {
				return &apperr.Error{Code: apperr.HoldsExpired, Message: "one or more seats are no longer held",
					Seats: []string{h.seat.String()}}
			}
			b.Offer = b.Offer || h.offer
		}
		if c.sale() {
			cust := held[0].customer
			for _, h := range held {
				switch {
				case h.customer == nil:
					return &apperr.Error{Code: apperr.Invalid, Message: "only holds made for a named customer can be sold at the box office",
						Fields: map[string]string{"hold_ids": "must be box-office holds for a customer"}}
				case h.customer.Email != cust.Email:
					return &apperr.Error{Code: apperr.Invalid, Message: "the holds are for different customers; sell them separately",
						Fields: map[string]string{"hold_ids": "must all be for one customer"}}
				}
			}
			b.Customer = cust
			if _, err := tx.Exec(ctx, `
				UPDATE bookings SET channel = 'box_office', payment_method = $3, customer_name = $4, customer_email = $5, customer_note = $6
				WHERE org_id = $1 AND id = $2`, c.org, b.ID, c.payment, cust.Name, cust.Email, cust.Note); err != nil {
				return err
			}
		}
		rows, err = tx.Query(ctx, `
			WITH h AS (
			    UPDATE seat_holds SET status = 'converted', ended_at = now()
			    WHERE org_id = $1 AND id = ANY($2::uuid[]) AND status = 'active'
			    RETURNING id, seat_id
			), st AS (
			    UPDATE seats SET status = 'sold', hold_id = NULL, version = version + 1, updated_at = now()
			    FROM h WHERE seats.org_id = $1 AND seats.id = h.seat_id AND seats.hold_id = h.id
			    RETURNING seats.id, seats.idx, seats.version, h.id AS hold_id, seats.category
			), t AS (
			    -- The price paid is the category's price at the sale.
			    INSERT INTO tickets (org_id, event_id, booking_id, seat_id, seat_idx, hold_id, price_minor, currency)
			    SELECT $1, $3, $4, st.id, st.idx, st.hold_id, c.price_minor, c.currency
			    FROM st LEFT JOIN event_categories c ON c.org_id = $1 AND c.event_id = $3 AND c.key = st.category
			    RETURNING id, seat_id, hold_id, price_minor, currency
			), a AS (
			    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
			    SELECT $1, $3, $5, 'seat.sold', 'booking', $4, st.id,
			           jsonb_build_object('hold_id', st.hold_id) || coalesce(jsonb_build_object('payment_method', $6::text), '{}')
			    FROM st
			)
			SELECT t.id, t.seat_id, t.hold_id, coalesce(t.price_minor, 0), coalesce(t.currency, ''), st.version
			FROM t JOIN st ON st.id = t.seat_id ORDER BY t.seat_id`,
			c.org, c.holds, c.event, b.ID, c.user, payment)
		if err != nil {
			return err
		}
		if err := b.collectSold(rows, nil); err != nil {
			return err
		}
		if len(b.Tickets) != len(c.holds) {
			return fmt.Errorf("purchase: %d of %d seats sold after lock", len(b.Tickets), len(c.holds))
		}
		// Decided on the prices the tickets were just written at: no read
		// of its own, and a refusal rolls the writes back. Refusals are
		// rare (a buyer's page starts a payment for priced seats).
		if c.freeOnly && slices.ContainsFunc(b.Tickets, func(t Ticket) bool { return t.PriceMinor > 0 }) {
			return ErrNotFree
		}
		return nil
	})
	if err != nil {
		return Booking{}, err
	}
	if b.Replayed {
		return s.bookingByKey(ctx, c.org, c.user, c.key, hash)
	}
	b.OrgID, b.EventID, b.UserID, b.Status, b.Channel, b.PaymentMethod = c.org, c.event, c.user, BookingConfirmed, channel, c.payment
	return b, nil
}

// collectSold reads the tickets a sale wrote (id, seat, hold, price,
// currency, and the seat's new version) into b; prev, when set, names
// the seats' statuses before the sale.
func (b *Booking) collectSold(rows pgx.Rows, prev map[uuid.UUID]SeatStatus) error {
	defer rows.Close()
	for rows.Next() {
		var t Ticket
		var v int64
		if err := rows.Scan(&t.ID, &t.SeatID, &t.HoldID, &t.PriceMinor, &t.Currency, &v); err != nil {
			return err
		}
		b.Tickets = append(b.Tickets, t)
		b.Sold = append(b.Sold, SoldSeat{SeatID: t.SeatID, HoldID: t.HoldID, Version: v, Prev: prev[t.SeatID]})
	}
	return rows.Err()
}

func (s *Bookings) bookingByKey(ctx context.Context, org, user uuid.UUID, key, hash string) (Booking, error) {
	var id uuid.UUID
	var storedHash string
	err := s.db.QueryRow(ctx, `
		SELECT id, request_hash FROM bookings WHERE org_id = $1 AND user_id = $2 AND idempotency_key = $3`,
		org, user, key).Scan(&id, &storedHash)
	if err != nil {
		return Booking{}, notFoundIfNoRows(err, "booking")
	}
	if storedHash != hash {
		return Booking{}, apperr.E(apperr.IdempotencyMismatch, "this Idempotency-Key was used for a different purchase")
	}
	b, err := s.ByID(ctx, org, uuid.Nil, id)
	b.Replayed = true
	return b, err
}

package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// paidSeat is one seat of a payment as its success finds it.
type paidSeat struct {
	seat, original uuid.UUID // the seat, and the hold the payment covered
	price          int64
	label          string
	status         SeatStatus
	current        uuid.UUID // the seat's hold now (uuid.Nil: none)
	buyers         bool      // that hold is the buyer's and active
	source         string    // that hold's source
	origStatus     HoldStatus
}

// succeed applies a payment's success: it sells the payment's seats to
// the buyer in this transaction, as a purchase does (holds converted,
// seats sold, tickets at the prices paid, seat.sold audit rows the feed
// and the outbox follow, and booking.paid) — if every seat is still the
// buyer's (an active hold of theirs, whichever) or free again after the
// payment's holds lapsed. If any seat was taken meanwhile (held by
// someone else, sold, blocked), nothing is sold: the payment is marked for
// a refund of its whole amount, with the reason, and the refund is written
// for the caller to send.
func (s *Payments) succeed(ctx context.Context, tx pgx.Tx, p payRow, ch PaymentChange, out *PaymentApplied) error {
	rows, err := tx.Query(ctx, `SELECT seat_id, hold_id, price_minor FROM payment_holds WHERE org_id = $1 AND payment_id = $2 ORDER BY seat_id`,
		p.org, p.id)
	if err != nil {
		return err
	}
	var seatIDs, holdIDs []uuid.UUID
	prices := map[uuid.UUID]int64{}
	var seat, hold uuid.UUID
	var price int64
	if _, err := pgx.ForEachRow(rows, []any{&seat, &hold, &price}, func() error {
		seatIDs, holdIDs, prices[seat] = append(seatIDs, seat), append(holdIDs, hold), price
		return nil
	}); err != nil {
		return err
	}
	// Hold rows first, then seats: the order of every statement that ends
	// a hold (purchase, release, the reaper), so none of them deadlocks
	// with this one.
	if _, err := tx.Exec(ctx, `
		SELECT 1 FROM seat_holds
		WHERE org_id = $1 AND (id = ANY($2::uuid[]) OR (event_id = $3 AND seat_id = ANY($4::uuid[]) AND status = 'active'))
		ORDER BY seat_id, id FOR NO KEY UPDATE`, p.org, holdIDs, p.event, seatIDs); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, `
		SELECT x.seat_id, x.hold_id, sec.label || '-' || s.row_label || '-' || s.number, s.status,
		       coalesce(h.id, '00000000-0000-0000-0000-000000000000'), coalesce(h.user_id = $4 AND h.status = 'active', false),
		       coalesce(h.source, ''), oh.status
		FROM unnest($2::uuid[], $3::uuid[]) AS x(seat_id, hold_id)
		JOIN seats s ON s.org_id = $1 AND s.id = x.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		JOIN seat_holds oh ON oh.org_id = $1 AND oh.id = x.hold_id
		LEFT JOIN seat_holds h ON h.org_id = $1 AND h.id = s.hold_id
		ORDER BY s.id FOR NO KEY UPDATE OF s`, p.org, seatIDs, holdIDs, p.user)
	if err != nil {
		return err
	}
	seats, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paidSeat, error) {
		var x paidSeat
		err := r.Scan(&x.seat, &x.original, &x.label, &x.status, &x.current, &x.buyers, &x.source, &x.origStatus)
		x.price = prices[x.seat]
		return x, err
	})
	if err != nil {
		return err
	}
	var onSale bool
	if err := tx.QueryRow(ctx, `SELECT status = 'on_sale' FROM events WHERE org_id = $1 AND id = $2`, p.org, p.event).Scan(&onSale); err != nil {
		return err
	}
	var taken []string
	for _, x := range seats {
		switch {
		case x.status == Held && x.buyers:
		case x.status == Available && onSale && (x.origStatus == HoldExpired || x.origStatus == HoldReleased):
			// Free again after the payment's hold lapsed: sold on the
			// hold the buyer paid for.
		default:
			taken = append(taken, x.label)
		}
	}
	if len(taken) > 0 || len(seats) == 0 {
		return s.refundWhole(ctx, tx, p, ch, seatIDs, taken, out)
	}
	return s.sell(ctx, tx, p, ch, seats, out)
}

// sell makes the payment's booking from seats, all of which are the
// buyer's or free.
func (s *Payments) sell(ctx context.Context, tx pgx.Tx, p payRow, ch PaymentChange, seats []paidSeat, out *PaymentApplied) error {
	b := Booking{OrgID: p.org, EventID: p.event, UserID: p.user, Status: BookingConfirmed, Channel: ChannelWeb, PaymentID: p.id}
	useSeat, useHold, usePrice := make([]uuid.UUID, len(seats)), make([]uuid.UUID, len(seats)), make([]int64, len(seats))
	prev := map[uuid.UUID]SeatStatus{}
	for i, x := range seats {
		useSeat[i], useHold[i], usePrice[i] = x.seat, x.original, x.price
		if x.status == Held {
			useHold[i] = x.current // the buyer's hold now (the one paid for, or a later one)
			b.Offer = b.Offer || x.source == SourceWaitlist
		}
		prev[x.seat] = x.status
	}
	err := tx.QueryRow(ctx, `
		INSERT INTO bookings (org_id, event_id, user_id, idempotency_key, request_hash, payment_id)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_at, reference`,
		p.org, p.event, p.user, "payment:"+p.id.String(), RequestHash(p.event, useHold, "payment"), p.id).
		Scan(&b.ID, &b.CreatedAt, &b.Reference)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `
		WITH u AS (
		    SELECT * FROM unnest($3::uuid[], $4::uuid[], $5::bigint[]) AS u(seat_id, hold_id, price_minor)
		), h AS (
		    UPDATE seat_holds SET status = 'converted', ended_at = coalesce(ended_at, now())
		    FROM u WHERE seat_holds.org_id = $1 AND seat_holds.id = u.hold_id
		    RETURNING seat_holds.id
		), st AS (
		    UPDATE seats SET status = 'sold', hold_id = NULL, version = version + 1, updated_at = now()
		    FROM u WHERE seats.org_id = $1 AND seats.id = u.seat_id AND seats.status IN ('held', 'available')
		    RETURNING seats.id, seats.version
		), t AS (
		    INSERT INTO tickets (org_id, event_id, booking_id, seat_id, seat_idx, hold_id, price_minor, currency)
		    SELECT $1, $2, $6, u.seat_id, s.idx, u.hold_id, u.price_minor, $7
		    FROM u JOIN h ON h.id = u.hold_id JOIN seats s ON s.org_id = $1 AND s.id = u.seat_id
		    RETURNING id, seat_id, hold_id, price_minor, currency
		), a AS (
		    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		    SELECT $1, $2, $8, 'seat.sold', 'booking', $6, t.seat_id, jsonb_build_object('hold_id', t.hold_id, 'payment_id', $9::uuid)
		    FROM t
		)
		SELECT t.id, t.seat_id, t.hold_id, t.price_minor, t.currency, st.version
		FROM t JOIN st ON st.id = t.seat_id ORDER BY t.seat_id`,
		p.org, p.event, useSeat, useHold, usePrice, b.ID, p.currency, p.user, p.id)
	if err != nil {
		return err
	}
	if err := b.collectSold(rows, prev); err != nil {
		return err
	}
	if len(b.Tickets) != len(seats) {
		return fmt.Errorf("paid sale: %d of %d seats sold after lock", len(b.Tickets), len(seats))
	}
	if _, err := tx.Exec(ctx, `
		UPDATE payments SET status = 'succeeded', booking_id = $3, status_at = $4, updated_at = now(), failure_message = NULL
		WHERE org_id = $1 AND id = $2`, p.org, p.id, b.ID, at(ch)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
		VALUES ($1, $2, $3, 'booking.paid', 'payment', $4,
		        jsonb_build_object('booking_id', $5::uuid, 'reference', $6::text, 'amount_minor', $7::bigint,
		                           'currency', $8::text, 'seats', $9::int, 'holder', $3::uuid))`,
		p.org, p.event, p.user, p.id, b.ID, b.Reference, p.amount, p.currency, len(b.Tickets)); err != nil {
		return err
	}
	out.Booking = &b
	return nil
}

// refundWhole records a success whose seats cannot all be sold: the
// payment succeeded, sells nothing, and is refunded in full for the
// reason given (shown to the buyer). The buyer's holds still on its seats
// stay until their time, as ordinary holds.
func (s *Payments) refundWhole(ctx context.Context, tx pgx.Tx, p payRow, ch PaymentChange, seatIDs []uuid.UUID, taken []string, out *PaymentApplied) error {
	why := "the seats were taken by someone else after the payment's hold ran out; the payment is refunded in full"
	if len(taken) > 0 {
		noun := "seat " + taken[0] + " was"
		if len(taken) > 1 {
			noun = "seats " + strings.Join(taken, ", ") + " were"
		}
		why = noun + " taken by someone else after the payment's hold ran out; the payment is refunded in full"
	}
	if _, err := tx.Exec(ctx, `
		UPDATE payments SET status = 'succeeded', status_at = $3, refund_reason = $4, updated_at = now(), failure_message = NULL
		WHERE org_id = $1 AND id = $2`, p.org, p.id, at(ch), why); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE seat_holds SET payment_id = NULL WHERE org_id = $1 AND payment_id = $2 AND status = 'active'`,
		p.org, p.id); err != nil {
		return err
	}
	r, err := s.insertRefund(ctx, tx, Refund{OrgID: p.org, PaymentID: p.id, AmountMinor: p.amount, Currency: p.currency,
		Reason: RefundSeatsTaken, SeatIDs: seatIDs})
	if err != nil {
		return err
	}
	r.IntentID = p.IntentID
	out.Refund = &r
	if out.notify == nil {
		return nil
	}
	n := SeatsTakenNotice{Org: p.org, Payment: p.id, Event: p.event, AmountMinor: p.amount, Currency: p.currency, Reason: why}
	if err := tx.QueryRow(ctx, `
		SELECT u.email, e.name, o.name FROM users u
		JOIN events e ON e.org_id = u.org_id AND e.id = $3
		JOIN organizations o ON o.id = u.org_id
		WHERE u.org_id = $1 AND u.id = $2`, p.org, p.user, p.event).Scan(&n.To, &n.EventName, &n.OrgName); err != nil {
		return err
	}
	return out.notify(ctx, tx, n)
}

// SeatsTakenNotice is what the buyer of a payment refunded in full by
// seatd itself (its seats were taken after its holds lapsed) is told.
type SeatsTakenNotice struct {
	Org, Payment, Event uuid.UUID
	To                  string // the buyer's address
	OrgName, EventName  string
	AmountMinor         int64
	Currency            string
	Reason              string // the payment's refund_reason
}

// SeatsTakenMail writes the mail of n to the outbox in tx, the
// transaction that records the refund (so the buyer is told once, and
// only if the refund is recorded).
type SeatsTakenMail func(ctx context.Context, tx pgx.Tx, n SeatsTakenNotice) error

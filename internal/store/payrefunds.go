package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// refundGrace is how long a refund just written is left to the call that
// wrote it, which sends it at once, before the reconciler sends it again
// (with the same idempotency key: one refund either way).
const refundGrace = 30 * time.Second

const refundColumns = `
	SELECT r.id, r.org_id, r.payment_id, coalesce(r.booking_id, '00000000-0000-0000-0000-000000000000'), r.amount_minor,
	       r.currency, r.status, r.reason, r.note, coalesce(r.provider_refund_id, ''), r.idempotency_key, r.attempt,
	       coalesce(r.failure_reason, ''), r.seat_ids, coalesce(r.requested_by, '00000000-0000-0000-0000-000000000000'),
	       r.created_at, r.updated_at, coalesce(p.intent_id, '')
	FROM refunds r JOIN payments p ON p.org_id = r.org_id AND p.id = r.payment_id`

func scanRefund(r pgx.CollectableRow) (Refund, error) {
	var x Refund
	err := r.Scan(&x.ID, &x.OrgID, &x.PaymentID, &x.BookingID, &x.AmountMinor, &x.Currency, &x.Status, &x.Reason, &x.Note,
		&x.ProviderRefundID, &x.IdempotencyKey, &x.Attempt, &x.FailureReason, &x.SeatIDs, &x.RequestedBy,
		&x.CreatedAt, &x.UpdatedAt, &x.IntentID)
	x.CreatedAt, x.UpdatedAt = x.CreatedAt.UTC(), x.UpdatedAt.UTC()
	return x, err
}

// refundsOfPayment selects (after refundColumns) a payment's refunds,
// oldest first.
const refundsOfPayment = ` WHERE r.org_id = $1 AND r.payment_id = $2 ORDER BY r.created_at, r.id`

// Refund returns a refund of org.
func (s *Payments) Refund(ctx context.Context, org, id uuid.UUID) (Refund, error) {
	rows, err := s.db.Query(ctx, refundColumns+` WHERE r.org_id = $1 AND r.id = $2`, org, id)
	if err != nil {
		return Refund{}, err
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRefund)
	return r, notFoundIfNoRows(err, "refund")
}

// FailedRefunds lists an organization's failed refunds, newest first: each
// needs someone to retry it (RetryRefund) or settle it with the buyer.
func (s *Payments) FailedRefunds(ctx context.Context, org uuid.UUID) ([]Refund, error) {
	rows, err := s.db.Query(ctx, refundColumns+` WHERE r.org_id = $1 AND r.status = 'failed' ORDER BY r.created_at DESC LIMIT 500`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRefund)
}

// refundKey is the idempotency key the provider gets for a refund's
// attempt: unique across the provider account, and the same for every
// sending of one attempt.
func refundKey(id uuid.UUID, attempt int) string {
	if attempt <= 1 {
		return "seatd_refund_" + id.String()
	}
	return "seatd_refund_" + id.String() + "_" + strconv.Itoa(attempt)
}

// insertRefund writes a refund to send (status requested).
func (s *Payments) insertRefund(ctx context.Context, tx pgx.Tx, r Refund) (Refund, error) {
	r.ID, r.Status, r.Attempt = NewID(), RefundRequested, 1
	r.IdempotencyKey = refundKey(r.ID, 1)
	if r.SeatIDs == nil {
		r.SeatIDs = []uuid.UUID{}
	}
	err := tx.QueryRow(ctx, `
		INSERT INTO refunds (org_id, id, payment_id, booking_id, amount_minor, currency, reason, note, idempotency_key,
		                     seat_ids, requested_by, next_check_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + $12::interval)
		RETURNING created_at, updated_at`,
		r.OrgID, r.ID, r.PaymentID, nilIfZero(r.BookingID), r.AmountMinor, r.Currency, r.Reason, r.Note, r.IdempotencyKey,
		r.SeatIDs, nilIfZero(r.RequestedBy), refundGrace).Scan(&r.CreatedAt, &r.UpdatedAt)
	return r, err
}

// CancelBooking cancels tickets of a booking, as Bookings.Cancel does, and,
// for a booking paid online, writes in the same transaction the refund of
// the cancelled tickets' prices, for the caller to send: a cancellation and
// its refund happen together or not at all, and cancelling a ticket again
// is refused, so no ticket is refunded twice. The refund is nil for a
// booking not paid online (or tickets that cost nothing).
func (s *Payments) CancelBooking(ctx context.Context, org, booking, actor uuid.UUID, ticketIDs []uuid.UUID, reason string) (Booking, []SoldSeat, *Refund, error) {
	var c cancellation
	var refund *Refund
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		refund = nil
		c, err = (&Bookings{s.shared}).cancelTickets(ctx, tx, org, booking, actor, ticketIDs, reason, true)
		if err != nil || c.payment == uuid.Nil {
			return err
		}
		var amount int64
		seats := make([]uuid.UUID, 0, len(c.tickets))
		for _, t := range c.tickets {
			amount += t.PriceMinor
			seats = append(seats, t.SeatID)
		}
		if amount == 0 {
			return nil
		}
		var currency, intent string
		if err := tx.QueryRow(ctx, `SELECT currency, coalesce(intent_id, '') FROM payments WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`,
			org, c.payment).Scan(&currency, &intent); err != nil {
			return err
		}
		r, err := s.insertRefund(ctx, tx, Refund{OrgID: org, PaymentID: c.payment, BookingID: booking, AmountMinor: amount,
			Currency: currency, Reason: RefundCancelled, Note: reason, SeatIDs: seats, RequestedBy: actor})
		r.IntentID = intent
		refund = &r
		return err
	})
	if err != nil {
		return Booking{}, nil, nil, err
	}
	b, err := (&Bookings{s.shared}).ByID(ctx, org, uuid.Nil, booking)
	return b, c.freed, refund, err
}

// RetryRefund makes a failed refund a new attempt (a new idempotency key:
// the provider's failed refund is final) and answers it to send; a
// refund still requested is answered as it is, to send again with its
// key. Any other refund cannot be retried (Conflict).
func (s *Payments) RetryRefund(ctx context.Context, org, id uuid.UUID) (Refund, error) {
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var status RefundStatus
		var attempt int
		if err := tx.QueryRow(ctx, `SELECT status, attempt FROM refunds WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`, org, id).
			Scan(&status, &attempt); err != nil {
			return notFoundIfNoRows(err, "refund")
		}
		switch status {
		case RefundRequested:
			return nil
		case RefundFailed:
		default:
			return apperr.E(apperr.Conflict, "the refund is %s: there is nothing to retry", status)
		}
		_, err := tx.Exec(ctx, `
			UPDATE refunds SET status = 'requested', attempt = $3, idempotency_key = $4, failure_reason = NULL,
			       provider_refund_id = NULL, next_check_at = now() + $5::interval, updated_at = now()
			WHERE org_id = $1 AND id = $2`, org, id, attempt+1, refundKey(id, attempt+1), refundGrace)
		return err
	})
	if err != nil {
		return Refund{}, err
	}
	return s.Refund(ctx, org, id)
}

// refundChange applies news of refunds to a payment: a refund's state
// (found by seatd's id in its metadata, else by the provider's id; one
// seatd did not make is left alone) and the charge's refunded total. The
// payment becomes refunded or partially refunded from what was refunded.
func (s *Payments) refundChange(ctx context.Context, tx pgx.Tx, p payRow, ch PaymentChange, out *PaymentApplied) error {
	if rc := ch.Refund; rc != nil {
		var cur Refund
		rows, err := tx.Query(ctx, refundColumns+`
			WHERE r.org_id = $1 AND r.payment_id = $2 AND (r.id = $3 OR ($3::uuid IS NULL AND r.provider_refund_id = $4))
			FOR NO KEY UPDATE OF r`, p.org, p.id, nilIfZero(rc.RefundID), rc.ProviderID)
		if err != nil {
			return err
		}
		cur, err = pgx.CollectExactlyOneRow(rows, scanRefund)
		switch {
		case err == nil:
			if err := s.refundTo(ctx, tx, p, cur, rc, out); err != nil {
				return err
			}
		case errors.Is(err, pgx.ErrNoRows):
			// Made on the provider's side: the charge's total counts it.
		default:
			return err
		}
	}
	if ch.ChargeRefunded > 0 {
		if _, err := tx.Exec(ctx, `
			UPDATE payments SET charge_refunded_minor = greatest(charge_refunded_minor, $3) WHERE org_id = $1 AND id = $2`,
			p.org, p.id, ch.ChargeRefunded); err != nil {
			return err
		}
	}
	var sum, charge, refunded int64
	var status PaymentStatus
	if err := tx.QueryRow(ctx, `
		SELECT (SELECT coalesce(sum(amount_minor), 0) FROM refunds WHERE org_id = $1 AND payment_id = $2 AND status = 'succeeded'),
		       charge_refunded_minor, refunded_minor, status
		FROM payments WHERE org_id = $1 AND id = $2`, p.org, p.id).Scan(&sum, &charge, &refunded, &status); err != nil {
		return err
	}
	total, to := min(p.amount, max(sum, charge)), status
	if status.Paid() {
		switch {
		case total >= p.amount:
			to = PaymentRefunded
		case total > 0:
			to = PaymentPartiallyRefunded
		default:
			to = PaymentSucceeded
		}
	}
	if total != refunded || to != status {
		if _, err := tx.Exec(ctx, `UPDATE payments SET refunded_minor = $3, status = $4, updated_at = now() WHERE org_id = $1 AND id = $2`,
			p.org, p.id, total, to); err != nil {
			return err
		}
		out.Changed = true
	}
	if !out.Changed {
		return ignoreEvent(ctx, tx, p.org, ch)
	}
	return nil
}

// refundTo moves a refund to the state the provider reports: a refund
// not yet final takes any news; a succeeded one may still fail (some
// payment methods fail late); failed and canceled ones are final. A
// refund that succeeds is told to integrators (refund.succeeded).
func (s *Payments) refundTo(ctx context.Context, tx pgx.Tx, p payRow, cur Refund, rc *RefundChange, out *PaymentApplied) error {
	to := rc.Status
	switch {
	case to == "" || to == cur.Status:
		if cur.ProviderRefundID == "" && rc.ProviderID != "" {
			_, err := tx.Exec(ctx, `UPDATE refunds SET provider_refund_id = $3 WHERE org_id = $1 AND id = $2`, p.org, cur.ID, rc.ProviderID)
			return err
		}
		return nil
	case cur.Status == RefundRequested || cur.Status == RefundPending:
	case cur.Status == RefundSucceeded && to == RefundFailed:
	default:
		return nil
	}
	if _, err := tx.Exec(ctx, `
		UPDATE refunds SET status = $3, provider_refund_id = coalesce(provider_refund_id, nullif($4, '')),
		       failure_reason = CASE WHEN $3 = 'failed' THEN coalesce(nullif($5, ''), 'the provider refused the refund') END,
		       updated_at = now()
		WHERE org_id = $1 AND id = $2`, p.org, cur.ID, to, rc.ProviderID, rc.FailureReason); err != nil {
		return err
	}
	out.Changed = true
	if to == RefundFailed {
		out.RefundsFailed = append(out.RefundsFailed, cur)
	}
	if to != RefundSucceeded {
		return nil
	}
	cur.Status = RefundSucceeded
	out.Refunded = append(out.Refunded, cur)
	_, err := tx.Exec(ctx, `
		INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
		VALUES ($1, $2, $3, 'refund.succeeded', 'refund', $4,
		        jsonb_build_object('payment_id', $5::uuid, 'booking_id', $6::uuid, 'amount_minor', $7::bigint,
		                           'currency', $8::text, 'reason', $9::text, 'holder', $10::uuid))`,
		p.org, p.event, nilIfZero(cur.RequestedBy), cur.ID, p.id, nilIfZero(cur.BookingID), cur.AmountMinor, cur.Currency,
		cur.Reason, p.user)
	return err
}

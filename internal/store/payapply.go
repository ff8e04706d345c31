package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// PaymentChange is what the provider said about a payment: one of its
// events (EventID set: applied once, whatever the deliveries), or its
// answer to a question seatd asked (EventID empty: a retrieve by the
// reconciler, a cancel, a refund request).
type PaymentChange struct {
	EventID string
	Type    string // the event's type, for the record ("" for an answer)
	// At is when the provider says it happened: a non-final status older
	// than the payment's does not replace it.
	At       time.Time
	IntentID string
	// Status is the intent's status the change reports; "" for news of
	// refunds only.
	Status         PaymentStatus
	FailureMessage string
	// ChargeRefunded is the charge's refunded total (charge.refunded), 0
	// when the change does not report it.
	ChargeRefunded int64
	Refund         *RefundChange
}

// RefundChange is a refund's state as the provider reports it.
type RefundChange struct {
	RefundID      uuid.UUID // seatd's refund (metadata); uuid.Nil when it names none
	ProviderID    string
	Status        RefundStatus
	FailureReason string
}

// PaymentApplied is what applying a change did.
type PaymentApplied struct {
	// Payment is the payment after the change.
	Payment Payment
	// Duplicate: the event was applied before; nothing changed.
	Duplicate bool
	// Changed: the payment's status (or a refund's) changed.
	Changed bool
	// Booking is the booking this change made (a success that sold its
	// seats), with the seats sold; nil otherwise.
	Booking *Booking
	// Refund is a refund this change decided (a success whose seats could
	// not be sold): to send to the provider now.
	Refund *Refund
	// Refunded and RefundsFailed list refunds that succeeded, or failed,
	// with this change.
	Refunded, RefundsFailed []Refund

	notify SeatsTakenMail
}

// Apply applies a change of the provider to a payment of org in one
// transaction: the payment's row lock puts every change of one payment in a
// line, and an event is recorded in payment_events under it, so a copy of
// it (delivered again, or at the same time) finds it and changes nothing.
// A payment that does not exist is NotFound.
// A success sells the payment's seats (see succeed) exactly once: the
// payment's booking is written once, under the row lock and a unique key.
// A success whose seats cannot be sold is refunded in full, and mail (when
// not nil) tells the buyer in the same transaction.
func (s *Payments) Apply(ctx context.Context, org, id uuid.UUID, ch PaymentChange, mail SeatsTakenMail) (PaymentApplied, error) {
	var out PaymentApplied
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		out = PaymentApplied{notify: mail}
		// Copies of an event wait for the one applying it, in a line on
		// the payment's row: they are answered once it commits,
		// which a sale under load may take longer than the pool's lock
		// timeout (set for buyers' requests, which answer busy instead).
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+applyLockTimeout+`'`); err != nil {
			return err
		}
		p, err := s.lock(ctx, tx, org, id)
		if err != nil {
			return err
		}
		if ch.EventID != "" {
			tag, err := tx.Exec(ctx, `
				INSERT INTO payment_events (org_id, event_id, payment_id, type, result, created_at)
				VALUES ($1, $2, $3, $4, 'applied', $5) ON CONFLICT (org_id, event_id) DO NOTHING`,
				org, ch.EventID, id, ch.Type, ch.At)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				out.Duplicate = true
				return nil
			}
		}
		if ch.IntentID != "" && p.IntentID != "" && ch.IntentID != p.IntentID {
			// Not this payment's intent (a superseded one is its own
			// payment's): nothing to apply.
			return ignoreEvent(ctx, tx, org, ch)
		}
		if p.IntentID == "" && ch.IntentID != "" {
			// Signed by the provider and naming this payment: the intent
			// is its own, even if Mark has not written it yet.
			if _, err := tx.Exec(ctx, `UPDATE payments SET intent_id = $3 WHERE org_id = $1 AND id = $2`, org, id, ch.IntentID); err != nil {
				return err
			}
			p.IntentID = ch.IntentID
		}
		switch {
		case ch.Refund != nil || ch.ChargeRefunded > 0:
			err = s.refundChange(ctx, tx, p, ch, &out)
		case ch.Status == PaymentSucceeded:
			if p.Status.Paid() {
				return ignoreEvent(ctx, tx, org, ch)
			}
			out.Changed = true
			err = s.succeed(ctx, tx, p, ch, &out)
		case ch.Status != "":
			if !p.accepts(ch) {
				return ignoreEvent(ctx, tx, org, ch)
			}
			out.Changed = true
			err = s.setStatus(ctx, tx, p, ch)
		default:
			return ignoreEvent(ctx, tx, org, ch)
		}
		if err != nil {
			return err
		}
		out.Payment, err = s.get(ctx, tx, org, uuid.Nil, id)
		return err
	})
	if err == nil && out.Payment.ID == uuid.Nil {
		out.Payment, err = s.Get(ctx, org, uuid.Nil, id)
	}
	return out, err
}

// applyLockTimeout bounds Apply's waits for the payment's other changes:
// longer than the pool's, below its statement timeout (5 s by default), so
// a wait that ends is a lock timeout the caller may try again.
const applyLockTimeout = "3s"

// lock reads a payment under its row lock.
func (s *Payments) lock(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (payRow, error) {
	var p payRow
	p.org, p.id = org, id
	err := tx.QueryRow(ctx, `
		SELECT event_id, user_id, status, coalesce(intent_id, ''), amount_minor, currency, status_at
		FROM payments WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`, org, id).
		Scan(&p.event, &p.user, &p.Status, &p.IntentID, &p.amount, &p.currency, &p.statusAt)
	return p, notFoundIfNoRows(err, "payment")
}

// payRow is a payment as Apply reads it under its lock.
type payRow struct {
	org, id, event, user uuid.UUID
	Status               PaymentStatus
	IntentID             string
	amount               int64
	currency             string
	statusAt             time.Time
}

// ignoreEvent records that the event changed nothing (it stays recorded, so a
// redelivery is a duplicate).
func ignoreEvent(ctx context.Context, tx pgx.Tx, org uuid.UUID, ch PaymentChange) error {
	if ch.EventID == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE payment_events SET result = 'ignored' WHERE org_id = $1 AND event_id = $2`, org, ch.EventID)
	return err
}

// accepts says whether a non-success status may replace the payment's:
// only while the payment is live, and an event (not an answer) only if it
// is not older than the status it would replace. processing and failed
// follow each other as the buyer tries again; canceled ends it.
func (p payRow) accepts(ch PaymentChange) bool {
	if !p.Status.Live() || ch.Status == p.Status {
		return false
	}
	// Providers stamp events to the second: news of the same second as
	// the status it would replace is not older.
	if ch.EventID != "" && ch.At.Before(p.statusAt.Truncate(time.Second)) {
		return false
	}
	switch ch.Status {
	case PaymentProcessing, PaymentFailed, PaymentCanceled:
		return true
	}
	// requires_payment: the provider says the buyer still has to pay,
	// which is what a live payment already says.
	return false
}

// setStatus writes a non-success status. A failure is told to
// integrators (payment.failed); a cancellation lets go of the holds, which
// stay until their time as ordinary holds.
func (s *Payments) setStatus(ctx context.Context, tx pgx.Tx, p payRow, ch PaymentChange) error {
	if _, err := tx.Exec(ctx, `
		UPDATE payments SET status = $3, status_at = $4, updated_at = now(),
		       failure_message = CASE WHEN $3 = 'failed' THEN nullif($5, '') ELSE failure_message END
		WHERE org_id = $1 AND id = $2`, p.org, p.id, ch.Status, at(ch), ch.FailureMessage); err != nil {
		return err
	}
	switch ch.Status {
	case PaymentFailed:
		_, err := tx.Exec(ctx, `
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			VALUES ($1, $2, $3, 'payment.failed', 'payment', $4,
			        jsonb_build_object('amount_minor', $5::bigint, 'currency', $6::text, 'failure_message', $7::text, 'holder', $3::uuid))`,
			p.org, p.event, p.user, p.id, p.amount, p.currency, ch.FailureMessage)
		return err
	case PaymentCanceled:
		_, err := tx.Exec(ctx, `UPDATE seat_holds SET payment_id = NULL WHERE org_id = $1 AND payment_id = $2 AND status = 'active'`,
			p.org, p.id)
		return err
	}
	return nil
}

// at is the change's time, now for an answer without one.
func at(ch PaymentChange) time.Time {
	if ch.At.IsZero() {
		return time.Now()
	}
	return ch.At
}

// Expire cancels a payment whose intent the provider never made (the
// process making it stopped in between), once its deadline has passed:
// nobody can pay it, since nobody was given a way to.
func (s *Payments) Expire(ctx context.Context, org, id uuid.UUID) error {
	return inTx(ctx, s.db, func(tx pgx.Tx) error {
		p, err := s.lock(ctx, tx, org, id)
		if err != nil {
			return err
		}
		if p.IntentID != "" || !p.Status.Live() {
			return apperr.E(apperr.Conflict, "the payment has an intent, or is settled")
		}
		return s.setStatus(ctx, tx, p, PaymentChange{Status: PaymentCanceled})
	})
}

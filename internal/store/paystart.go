package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
)

// NewPayment describes a payment to begin.
type NewPayment struct {
	Org, Event, User uuid.UUID
	Key              string // the buyer's Idempotency-Key
	Provider         string // ProviderStripe or ProviderTest
	Deadline         time.Time
	// CheckAt is when the reconciler first asks the provider about it.
	CheckAt time.Time
}

// Begin writes a payment for the user's active holds of the event, priced
// from the event's categories now, or answers the payment the key made
// before (Replayed). It changes no hold: Mark does, once the provider has
// made the payment's intent, so a provider that fails leaves the holds as
// they were (Drop removes the payment then). A new payment is answered as
// written, without reading it back (Get would read the same: its holds in
// section and seat order, no refunds).
func (s *Payments) Begin(ctx context.Context, n NewPayment) (Payment, error) {
	var id uuid.UUID
	var made Payment
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		if id, err = s.byKey(ctx, tx, n); err != nil || id != uuid.Nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT h.id, h.seat_id, sec.label || '-' || s.row_label || '-' || s.number, s.category,
			       coalesce(c.price_minor, 0), coalesce(c.currency, ''), coalesce(p.status, '')
			FROM seat_holds h
			JOIN seats s ON s.org_id = h.org_id AND s.id = h.seat_id
			JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
			LEFT JOIN event_categories c ON c.org_id = s.org_id AND c.event_id = s.event_id AND c.key = s.category
			LEFT JOIN payments p ON p.org_id = h.org_id AND p.id = h.payment_id
			WHERE h.org_id = $1 AND h.event_id = $2 AND h.user_id = $3 AND h.status = 'active' AND h.held_until > now()
			ORDER BY sec.position, s.idx`, n.Org, n.Event, n.User)
		if err != nil {
			return err
		}
		type held struct {
			hold, seat       uuid.UUID
			label            string
			category         *string
			price            int64
			currency, paying string
		}
		hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (held, error) {
			var h held
			err := r.Scan(&h.hold, &h.seat, &h.label, &h.category, &h.price, &h.currency, &h.paying)
			return h, err
		})
		if err != nil {
			return err
		}
		if len(hs) == 0 {
			return apperr.E(apperr.HoldsExpired, "no seats of this event are held for you: hold them again")
		}
		var amount int64
		currency := ""
		for _, h := range hs {
			if PaymentStatus(h.paying) == PaymentProcessing {
				return apperr.E(apperr.Conflict, "a payment for these seats is being processed; wait for its answer")
			}
			if h.price == 0 {
				continue
			}
			if currency != "" && h.currency != currency {
				return apperr.E(apperr.Invalid, "the seats are priced in different currencies (%s, %s): pay for them separately", currency, h.currency)
			}
			currency, amount = h.currency, amount+h.price
		}
		if amount == 0 {
			return apperr.E(apperr.Invalid, "these seats cost nothing: there is nothing to pay")
		}
		made = Payment{ID: NewID(), OrgID: n.Org, EventID: n.Event, UserID: n.User, IdempotencyKey: n.Key, AmountMinor: amount,
			Currency: currency, Status: PaymentRequiresPayment, Provider: n.Provider, Holds: make([]PaymentHold, len(hs)), Refunds: []Refund{}}
		err = tx.QueryRow(ctx, `
			INSERT INTO payments (org_id, id, event_id, user_id, idempotency_key, amount_minor, currency, provider, deadline, next_check_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (org_id, user_id, idempotency_key) DO NOTHING
			RETURNING deadline, created_at, updated_at`,
			n.Org, made.ID, n.Event, n.User, n.Key, amount, currency, n.Provider, n.Deadline, n.CheckAt).
			Scan(&made.Deadline, &made.CreatedAt, &made.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			// A call with the same key committed meanwhile: answer its
			// payment (this statement waited for it).
			made = Payment{}
			id, err = s.byKey(ctx, tx, n)
			if err == nil && id == uuid.Nil {
				err = errors.New("payment: key taken but no payment found")
			}
			return err
		}
		if err != nil {
			return err
		}
		made.Deadline, made.CreatedAt, made.UpdatedAt = made.Deadline.UTC(), made.CreatedAt.UTC(), made.UpdatedAt.UTC()
		holdIDs, seatIDs, cats, prices := make([]uuid.UUID, len(hs)), make([]uuid.UUID, len(hs)), make([]*string, len(hs)), make([]int64, len(hs))
		for i, h := range hs {
			holdIDs[i], seatIDs[i], cats[i], prices[i] = h.hold, h.seat, h.category, h.price
			made.Holds[i] = PaymentHold{HoldID: h.hold, SeatID: h.seat, Seat: h.label, PriceMinor: h.price}
			if h.category != nil {
				made.Holds[i].Category = *h.category
			}
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO payment_holds (org_id, payment_id, hold_id, seat_id, category, price_minor)
			SELECT $1, $2, x.hold_id, x.seat_id, x.category, x.price_minor
			FROM unnest($3::uuid[], $4::uuid[], $5::text[], $6::bigint[]) AS x(hold_id, seat_id, category, price_minor)`,
			n.Org, made.ID, holdIDs, seatIDs, cats, prices)
		return err
	})
	if err != nil {
		return Payment{}, err
	}
	if made.ID != uuid.Nil {
		return made, nil
	}
	p, err := s.Get(ctx, n.Org, n.User, id)
	p.Replayed = true
	return p, err
}

// byKey finds the user's payment with n's key (uuid.Nil when none); the
// key used for another event is refused.
func (s *Payments) byKey(ctx context.Context, tx pgx.Tx, n NewPayment) (uuid.UUID, error) {
	var id, event uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id, event_id FROM payments WHERE org_id = $1 AND user_id = $2 AND idempotency_key = $3`,
		n.Org, n.User, n.Key).Scan(&id, &event)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return uuid.Nil, nil
	case err != nil:
		return uuid.Nil, err
	case event != n.Event:
		return uuid.Nil, apperr.E(apperr.IdempotencyMismatch, "this Idempotency-Key was used for a payment of another event")
	}
	return id, nil
}

// Drop removes a payment whose intent the provider did not make (its
// holds were never marked), so the buyer's next try with the same key
// begins afresh.
func (s *Payments) Drop(ctx context.Context, org, id uuid.UUID) error {
	_, err := s.db.Exec(ctx, `
		DELETE FROM payments p WHERE org_id = $1 AND id = $2 AND status = 'requires_payment' AND booking_id IS NULL
		  AND NOT EXISTS (SELECT 1 FROM seat_holds h JOIN payment_holds ph ON ph.org_id = h.org_id AND ph.hold_id = h.id
		                  WHERE ph.org_id = $1 AND ph.payment_id = $2 AND h.payment_id = $2)`, org, id)
	return err
}

// Marked is what Mark did.
type Marked struct {
	// Extended are the holds now marked as paid for by the payment, with
	// their new held_until and seat versions (only those that changed).
	Extended []Hold
	// Superseded are the buyer's earlier payments whose holds this one
	// took over (not paid yet): their intents are to be canceled.
	Superseded []Payment
	// UpdatedAt is the payment's updated_at after Mark.
	UpdatedAt time.Time
}

// Mark records the payment's intent and marks its holds as paid for by it,
// each kept until the payment's deadline (or its own held_until, if
// later), with a hold.extended audit row so every replica follows. Every
// hold must still be the buyer's, active and unexpired (else
// HoldsExpired), and none may belong to a payment that is processing
// (Conflict); holds of the buyer's earlier payments not paid yet are taken
// over. Marking again changes nothing.
func (s *Payments) Mark(ctx context.Context, org, id uuid.UUID, intentID string) (Marked, error) {
	var out Marked
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var user uuid.UUID
		var status PaymentStatus
		var deadline time.Time
		var stored string
		err := tx.QueryRow(ctx, `
			SELECT user_id, status, deadline, coalesce(intent_id, ''), updated_at FROM payments WHERE org_id = $1 AND id = $2 FOR NO KEY UPDATE`,
			org, id).Scan(&user, &status, &deadline, &stored, &out.UpdatedAt)
		if err != nil {
			return notFoundIfNoRows(err, "payment")
		}
		if stored != "" && stored != intentID {
			return fmt.Errorf("payment %s: intent %s, not %s", id, stored, intentID)
		}
		if status != PaymentRequiresPayment {
			return apperr.E(apperr.Conflict, "this payment is %s already", status)
		}
		var others, ids []uuid.UUID
		var problem error
		rows, err := tx.Query(ctx, `
			SELECT h.id, h.seat_id, h.status, h.user_id = $3, h.held_until > now(), h.payment_id, coalesce(p.status, '')
			FROM payment_holds ph
			JOIN seat_holds h ON h.org_id = ph.org_id AND h.id = ph.hold_id
			LEFT JOIN payments p ON p.org_id = h.org_id AND p.id = h.payment_id
			WHERE ph.org_id = $1 AND ph.payment_id = $2
			ORDER BY h.seat_id FOR NO KEY UPDATE OF h`, org, id, user)
		if err != nil {
			return err
		}
		for rows.Next() {
			var hold, seat uuid.UUID
			var hs HoldStatus
			var mine, fresh bool
			var by *uuid.UUID
			var byStatus PaymentStatus
			if err := rows.Scan(&hold, &seat, &hs, &mine, &fresh, &by, &byStatus); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, hold)
			switch {
			case problem != nil:
			case hs != HoldActive || !mine || !fresh:
				problem = &apperr.Error{Code: apperr.HoldsExpired, Message: "one or more seats are no longer held: hold them again",
					Seats: []string{seat.String()}}
			case by == nil || *by == id:
			case byStatus == PaymentProcessing:
				problem = apperr.E(apperr.Conflict, "a payment for these seats is being processed; wait for its answer")
			default:
				others = append(others, *by)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if problem != nil {
			return problem
		}
		if stored == "" {
			// The test provider stores its intent on the payment itself
			// (store.PaymentLedger); another provider's is written here.
			if err := tx.QueryRow(ctx, `UPDATE payments SET intent_id = $3, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING updated_at`,
				org, id, intentID).Scan(&out.UpdatedAt); err != nil {
				return err
			}
		}
		out.UpdatedAt = out.UpdatedAt.UTC()
		if len(others) > 0 {
			if out.Superseded, err = s.supersede(ctx, tx, org, others); err != nil {
				return err
			}
		}
		rows, err = tx.Query(ctx, `
			WITH h AS (
			    UPDATE seat_holds SET held_until = greatest(held_until, $4), payment_id = $2
			    WHERE org_id = $1 AND id = ANY($3::uuid[]) AND status = 'active' AND payment_id IS DISTINCT FROM $2
			    RETURNING id, org_id, event_id, seat_id, user_id, status, held_until, created_at, extensions, fence, source
			), st AS (
			    UPDATE seats SET version = version + 1, updated_at = now()
			    FROM h WHERE seats.org_id = $1 AND seats.id = h.seat_id AND seats.hold_id = h.id
			    RETURNING seats.id, seats.version
			), a AS (
			    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
			    SELECT $1, h.event_id, h.user_id, 'hold.extended', 'seat_hold', h.id, h.seat_id,
			           jsonb_build_object('held_until', h.held_until, 'payment_id', $2::uuid)
			    FROM h
			)
			SELECT h.id, h.org_id, h.event_id, h.seat_id, h.user_id, h.status, h.held_until, h.created_at, h.extensions,
			       h.fence, h.source, st.version
			FROM h JOIN st ON st.id = h.seat_id ORDER BY h.seat_id`, org, id, ids, deadline)
		if err != nil {
			return err
		}
		out.Extended, err = pgx.CollectRows(rows, scanChangedHold)
		for i := range out.Extended {
			out.Extended[i].PaymentID = id
		}
		return err
	})
	return out, err
}

// supersede lets go of the active holds of the payments listed (the
// buyer's earlier payments, not paid yet) and returns those payments, for
// their intents to be canceled. Their status stays until the provider
// says canceled (or, if the buyer paid one after all, succeeded: its
// success then sells what it still can, and refunds otherwise).
func (s *Payments) supersede(ctx context.Context, tx pgx.Tx, org uuid.UUID, ids []uuid.UUID) ([]Payment, error) {
	if _, err := tx.Exec(ctx, `UPDATE seat_holds SET payment_id = NULL WHERE org_id = $1 AND payment_id = ANY($2::uuid[]) AND status = 'active'`,
		org, ids); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, paymentColumns+` WHERE p.org_id = $1 AND p.id = ANY($2::uuid[]) ORDER BY p.id`, org, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanPayment)
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/payment"
)

// PaymentLedger keeps the test provider's intents in the payments table,
// each beside the payment it belongs to (payments.test_intent), so a
// delayed test payment is answered as succeeded by any process, after any
// restart.
type PaymentLedger struct{ *shared }

var _ payment.Ledger = (*PaymentLedger)(nil)

var errNoTestIntent = apperr.E(apperr.NotFound, "no such payment intent")

// AddIntent implements payment.Ledger: the intent is stored on its
// payment (which the payment flow wrote before asking for the intent)
// unless the payment has one already, and the stored one is answered.
func (l *PaymentLedger) AddIntent(ctx context.Context, in payment.TestIntent) (payment.TestIntent, error) {
	org, err1 := uuid.Parse(in.OrgID)
	id, err2 := uuid.Parse(in.PaymentID)
	if err1 != nil || err2 != nil {
		return payment.TestIntent{}, fmt.Errorf("test intent %s: organization %q and payment %q must be ids", in.ID, in.OrgID, in.PaymentID)
	}
	b, err := json.Marshal(in) // #nosec G117 -- the test provider's own record: its card page checks the client secret; no money moves
	if err != nil {
		return payment.TestIntent{}, err
	}
	var stored []byte
	err = l.db.QueryRow(ctx, `
		UPDATE payments SET test_intent = coalesce(test_intent, $3), intent_id = coalesce(intent_id, $4), updated_at = now()
		WHERE org_id = $1 AND id = $2 RETURNING test_intent`, org, id, b, in.ID).Scan(&stored)
	if err != nil {
		return payment.TestIntent{}, notFoundIfNoRows(err, "payment")
	}
	return decodeTestIntent(stored)
}

// Intent implements payment.Ledger.
func (l *PaymentLedger) Intent(ctx context.Context, id string) (payment.TestIntent, error) {
	var stored []byte
	err := l.db.QueryRow(ctx, `SELECT test_intent FROM payments WHERE intent_id = $1 AND test_intent IS NOT NULL LIMIT 1`, id).Scan(&stored)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return payment.TestIntent{}, errNoTestIntent
		}
		return payment.TestIntent{}, err
	}
	return decodeTestIntent(stored)
}

// UpdateIntent implements payment.Ledger under the payment's row lock.
func (l *PaymentLedger) UpdateIntent(ctx context.Context, id string, change func(*payment.TestIntent) error) (payment.TestIntent, error) {
	var in payment.TestIntent
	err := inTx(ctx, l.db, func(tx pgx.Tx) error {
		var org, pay uuid.UUID
		var stored []byte
		err := tx.QueryRow(ctx, `
			SELECT org_id, id, test_intent FROM payments WHERE intent_id = $1 AND test_intent IS NOT NULL LIMIT 1 FOR NO KEY UPDATE`, id).
			Scan(&org, &pay, &stored)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoTestIntent
		}
		if err != nil {
			return err
		}
		if in, err = decodeTestIntent(stored); err != nil {
			return err
		}
		if err := change(&in); err != nil {
			return err
		}
		b, err := json.Marshal(in) // #nosec G117 -- as in AddIntent
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE payments SET test_intent = $3, updated_at = now() WHERE org_id = $1 AND id = $2`, org, pay, b)
		return err
	})
	if err != nil {
		return payment.TestIntent{}, err
	}
	return in, nil
}

func decodeTestIntent(b []byte) (payment.TestIntent, error) {
	var in payment.TestIntent
	if err := json.Unmarshal(b, &in); err != nil {
		return payment.TestIntent{}, fmt.Errorf("stored test intent: %w", err)
	}
	return in, nil
}

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// DuePayments claims up to limit payments not settled yet whose next
// check is due, oldest due first, and moves their next check after on:
// the reconciler's cursor is the due time, and a claim advances it, so
// every process's reconciler takes a disjoint batch (SKIP LOCKED), a
// payment the provider keeps failing to answer about goes to the back,
// and a process that dies with a claim leaves it due again after.
//
// Only payments of the provider named are claimed: a provider answers for
// its own intents only (a deployment that moved from the test provider to
// Stripe leaves the test payments alone).
func (s *Payments) DuePayments(ctx context.Context, provider string, after time.Duration, limit int) ([]Payment, error) {
	rows, err := s.db.Query(ctx, `
		WITH due AS (
		    UPDATE payments SET next_check_at = now() + $1::interval
		    WHERE (org_id, id) IN (
		        SELECT org_id, id FROM payments
		        WHERE status IN ('requires_payment', 'processing', 'failed') AND next_check_at <= now() AND provider = $3
		        ORDER BY next_check_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED)
		    RETURNING org_id, id
		)`+paymentColumns+` JOIN due ON due.org_id = p.org_id AND due.id = p.id ORDER BY p.created_at`, after, limit, provider)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanPayment)
}

// DueRefunds claims, like DuePayments, up to limit refunds still
// requested (written, the provider's answer not stored: the process that
// wrote it stopped, or the provider did not answer) whose next check is
// due, for the reconciler to send again with their keys.
func (s *Payments) DueRefunds(ctx context.Context, provider string, after time.Duration, limit int) ([]Refund, error) {
	rows, err := s.db.Query(ctx, `
		WITH due AS (
		    UPDATE refunds SET next_check_at = now() + $1::interval
		    WHERE (org_id, id) IN (
		        SELECT r.org_id, r.id FROM refunds r JOIN payments p ON p.org_id = r.org_id AND p.id = r.payment_id
		        WHERE r.status = 'requested' AND r.next_check_at <= now() AND p.provider = $3
		        ORDER BY r.next_check_at LIMIT $2 FOR NO KEY UPDATE OF r SKIP LOCKED)
		    RETURNING org_id, id
		)`+refundColumns+` JOIN due ON due.org_id = r.org_id AND due.id = r.id ORDER BY r.created_at`, after, limit, provider)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRefund)
}

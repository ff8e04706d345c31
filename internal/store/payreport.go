package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// PaymentSummary is one line of an event's payments figures: one price
// category (Category "" for seats without one) in one currency. Paid is
// what payments took (refunds counted apart), Pending what payments not
// settled yet and not past their deadline would take, Refunded what
// succeeded refunds returned, each with its count of seats.
type PaymentSummary struct {
	Category      string
	Name          string
	Currency      string
	PaidMinor     int64
	PaidSeats     int
	PendingMinor  int64
	PendingSeats  int
	RefundedMinor int64
	RefundedSeats int
}

// Summary reads an event's payment figures per category, in the
// categories' order. Refunds made on the provider's own dashboard are in
// their payment's refunded total but in no category (seatd cannot tell
// which seats they were for).
func (s *Payments) Summary(ctx context.Context, org, event uuid.UUID) ([]PaymentSummary, error) {
	rows, err := s.db.Query(ctx, `
		WITH seats AS (
		    SELECT coalesce(ph.category, '') AS category, p.currency, ph.price_minor, p.status, p.deadline > now() AS open,
		           EXISTS (SELECT 1 FROM refunds r WHERE r.org_id = p.org_id AND r.payment_id = p.id
		                   AND r.status = 'succeeded' AND ph.seat_id = ANY (r.seat_ids)) AS refunded
		    FROM payments p JOIN payment_holds ph ON ph.org_id = p.org_id AND ph.payment_id = p.id
		    WHERE p.org_id = $1 AND p.event_id = $2
		)
		SELECT x.category, coalesce(c.name, ''), x.currency,
		       coalesce(sum(x.price_minor) FILTER (WHERE x.status IN ('succeeded', 'refunded', 'partially_refunded')), 0),
		       count(*) FILTER (WHERE x.status IN ('succeeded', 'refunded', 'partially_refunded')),
		       coalesce(sum(x.price_minor) FILTER (WHERE x.status IN ('requires_payment', 'processing', 'failed') AND x.open), 0),
		       count(*) FILTER (WHERE x.status IN ('requires_payment', 'processing', 'failed') AND x.open),
		       coalesce(sum(x.price_minor) FILTER (WHERE x.refunded), 0),
		       count(*) FILTER (WHERE x.refunded)
		FROM seats x
		LEFT JOIN event_categories c ON c.org_id = $1 AND c.event_id = $2 AND c.key = x.category
		GROUP BY x.category, c.name, c.position, x.currency
		ORDER BY c.position NULLS LAST, x.category, x.currency`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentSummary, error) {
		var x PaymentSummary
		err := r.Scan(&x.Category, &x.Name, &x.Currency, &x.PaidMinor, &x.PaidSeats, &x.PendingMinor, &x.PendingSeats,
			&x.RefundedMinor, &x.RefundedSeats)
		return x, err
	})
}

// PaymentExportColumns are the columns of payments.csv, in order.
var PaymentExportColumns = []string{"payment_id", "created_at", "status", "buyer_email", "amount_minor", "currency",
	"refunded_minor", "provider", "intent_id", "booking_reference", "seats", "failure_message", "refund_reason", "updated_at"}

// ExportPayments streams an event's payments to row, oldest first, one
// row at a time as Postgres sends it (text columns only, as the other
// exports); the caller escapes the cells for a spreadsheet.
func (s *Payments) ExportPayments(ctx context.Context, org, event uuid.UUID, row func([]string) error) error {
	rows, err := s.db.Query(ctx, `
		SELECT p.id::text, to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), p.status, u.email,
		       p.amount_minor::text, p.currency, p.refunded_minor::text, p.provider, coalesce(p.intent_id, ''),
		       coalesce(b.reference, ''),
		       coalesce((SELECT string_agg(sec.label || '-' || st.row_label || '-' || st.number, ' ' ORDER BY sec.position, st.idx)
		                 FROM payment_holds ph
		                 JOIN seats st ON st.org_id = ph.org_id AND st.id = ph.seat_id
		                 JOIN sections sec ON sec.org_id = st.org_id AND sec.id = st.section_id
		                 WHERE ph.org_id = p.org_id AND ph.payment_id = p.id), ''),
		       coalesce(p.failure_message, ''), coalesce(p.refund_reason, ''),
		       to_char(p.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
		FROM payments p
		JOIN users u ON u.org_id = p.org_id AND u.id = p.user_id
		LEFT JOIN bookings b ON b.org_id = p.org_id AND b.id = p.booking_id
		WHERE p.org_id = $1 AND p.event_id = $2 ORDER BY p.created_at, p.id`, org, event)
	if err != nil {
		return err
	}
	vals := make([]string, len(PaymentExportColumns))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	_, err = pgx.ForEachRow(rows, dest, func() error { return row(vals) })
	return err
}

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/pg"
)

// PaymentStatus is a payment's state, as stored in payments.status.
type PaymentStatus string

// Payment statuses (migration 033). A payment follows its provider's
// word: requires_payment → processing → succeeded | failed | canceled; a
// failed one may still succeed (the buyer tries again); a succeeded one
// becomes partially_refunded or refunded as its refunds succeed.
const (
	PaymentRequiresPayment   PaymentStatus = "requires_payment"
	PaymentProcessing        PaymentStatus = "processing"
	PaymentSucceeded         PaymentStatus = "succeeded"
	PaymentFailed            PaymentStatus = "failed"
	PaymentCanceled          PaymentStatus = "canceled"
	PaymentRefunded          PaymentStatus = "refunded"
	PaymentPartiallyRefunded PaymentStatus = "partially_refunded"
)

// Live reports whether the payment may still be paid: its holds are kept
// for it and the reconciler asks the provider about it.
func (s PaymentStatus) Live() bool {
	return s == PaymentRequiresPayment || s == PaymentProcessing || s == PaymentFailed
}

// Paid reports whether the money was taken (whatever was refunded since).
func (s PaymentStatus) Paid() bool {
	return s == PaymentSucceeded || s == PaymentRefunded || s == PaymentPartiallyRefunded
}

// Payment providers, as stored in payments.provider.
const (
	ProviderStripe = "stripe"
	ProviderTest   = "test"
)

// Payment is a row of payments with what belongs to it.
type Payment struct {
	ID             uuid.UUID
	OrgID          uuid.UUID
	EventID        uuid.UUID
	UserID         uuid.UUID
	IdempotencyKey string
	AmountMinor    int64
	Currency       string // upper case
	Status         PaymentStatus
	Provider       string
	IntentID       string // "" until the provider made the intent
	// Deadline is when the payment's holds end and an unpaid intent is
	// canceled.
	Deadline time.Time
	// BookingID is the booking the payment made (uuid.Nil: none yet, or
	// none ever: see RefundReason); BookingReference its reference.
	BookingID        uuid.UUID
	BookingReference string
	// FailureMessage is the last declined attempt's sentence, for the
	// buyer.
	FailureMessage string
	// RefundReason says why seatd refunded the whole payment itself (its
	// seats could not be sold); "" otherwise.
	RefundReason  string
	RefundedMinor int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Holds are the holds it covers, with the price of each seat; Refunds
	// its refunds, oldest first (both read by Get only).
	Holds   []PaymentHold
	Refunds []Refund
	// Replayed: found by its idempotency key, not made by this call.
	Replayed bool
}

// PaymentHold is one hold a payment covers.
type PaymentHold struct {
	HoldID     uuid.UUID
	SeatID     uuid.UUID
	Seat       string // the seat's label ("S-A-12"), when read back
	Category   string
	PriceMinor int64
}

// RefundStatus is a refund's state, as stored in refunds.status.
type RefundStatus string

// Refund statuses: requested (written; the provider has not answered
// yet), then the provider's word.
const (
	RefundRequested RefundStatus = "requested"
	RefundPending   RefundStatus = "pending"
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
	RefundCanceled  RefundStatus = "canceled"
)

// Refund reasons.
const (
	RefundCancelled  = "cancelled"   // paid tickets cancelled by staff
	RefundSeatsTaken = "seats_taken" // the payment's seats could not be sold
)

// Refund is a row of refunds.
type Refund struct {
	ID          uuid.UUID
	OrgID       uuid.UUID
	PaymentID   uuid.UUID
	BookingID   uuid.UUID // uuid.Nil for a payment that made no booking
	AmountMinor int64
	Currency    string
	Status      RefundStatus
	Reason      string // RefundCancelled or RefundSeatsTaken
	Note        string // the staff's reason for a cancellation
	// ProviderRefundID is the provider's refund ("" until it answered).
	ProviderRefundID string
	IdempotencyKey   string
	Attempt          int
	FailureReason    string
	SeatIDs          []uuid.UUID
	RequestedBy      uuid.UUID
	CreatedAt        time.Time
	UpdatedAt        time.Time
	// IntentID is the payment's intent (read with a refund to send).
	IntentID string
}

// Payments stores payments, the holds they cover, the provider events
// applied to them, and their refunds.
type Payments struct{ *shared }

const paymentColumns = `
	SELECT p.id, p.org_id, p.event_id, p.user_id, p.idempotency_key, p.amount_minor, p.currency, p.status, p.provider,
	       coalesce(p.intent_id, ''), p.deadline, coalesce(p.booking_id, '00000000-0000-0000-0000-000000000000'),
	       coalesce(b.reference, ''), coalesce(p.failure_message, ''), coalesce(p.refund_reason, ''), p.refunded_minor,
	       p.created_at, p.updated_at
	FROM payments p
	LEFT JOIN bookings b ON b.org_id = p.org_id AND b.id = p.booking_id`

func scanPayment(r pgx.CollectableRow) (Payment, error) {
	var p Payment
	err := r.Scan(&p.ID, &p.OrgID, &p.EventID, &p.UserID, &p.IdempotencyKey, &p.AmountMinor, &p.Currency, &p.Status,
		&p.Provider, &p.IntentID, &p.Deadline, &p.BookingID, &p.BookingReference, &p.FailureMessage, &p.RefundReason,
		&p.RefundedMinor, &p.CreatedAt, &p.UpdatedAt)
	p.Deadline, p.CreatedAt, p.UpdatedAt = p.Deadline.UTC(), p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, err
}

// Get returns a payment of org with its holds and refunds; with a user,
// only that user's (a buyer sees their own payments only).
func (s *Payments) Get(ctx context.Context, org, user, id uuid.UUID) (Payment, error) {
	return s.get(ctx, s.db, org, user, id)
}

func (s *Payments) get(ctx context.Context, db pg.DBTX, org, user, id uuid.UUID) (Payment, error) {
	// One round trip for the three reads: a payment is read several times
	// per paid sale (checkout, the card page, the webhook, the buyer's
	// page), and each round trip costs both sides more than the reads.
	b := &pgx.Batch{}
	b.Queue(paymentColumns+`
		WHERE p.org_id = $1 AND p.id = $2 AND ($3::uuid IS NULL OR p.user_id = $3)`, org, id, nilIfZero(user))
	b.Queue(paymentHoldsQuery, org, id)
	b.Queue(refundColumns+refundsOfPayment, org, id)
	br := db.SendBatch(ctx, b)
	p, err := readPayment(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return p, err
}

// readPayment reads get's batch: the payment, then its holds and refunds
// (the two queries answer nothing for another buyer's payment).
func readPayment(br pgx.BatchResults) (Payment, error) {
	rows, err := br.Query()
	if err != nil {
		return Payment{}, err
	}
	p, err := pgx.CollectExactlyOneRow(rows, scanPayment)
	if err != nil {
		return Payment{}, notFoundIfNoRows(err, "payment")
	}
	if rows, err = br.Query(); err != nil {
		return Payment{}, err
	}
	if p.Holds, err = pgx.CollectRows(rows, scanPaymentHold); err != nil {
		return Payment{}, err
	}
	if rows, err = br.Query(); err != nil {
		return Payment{}, err
	}
	p.Refunds, err = pgx.CollectRows(rows, scanRefund)
	return p, err
}

const paymentHoldsQuery = `
		SELECT ph.hold_id, ph.seat_id, sec.label || '-' || s.row_label || '-' || s.number, coalesce(ph.category, ''), ph.price_minor
		FROM payment_holds ph
		JOIN seats s ON s.org_id = ph.org_id AND s.id = ph.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		WHERE ph.org_id = $1 AND ph.payment_id = $2 ORDER BY sec.position, s.idx`

func scanPaymentHold(r pgx.CollectableRow) (PaymentHold, error) {
	var h PaymentHold
	err := r.Scan(&h.HoldID, &h.SeatID, &h.Seat, &h.Category, &h.PriceMinor)
	return h, err
}

// PaymentFilter selects payments for List.
type PaymentFilter struct {
	Event uuid.UUID // required
	User  uuid.UUID // uuid.Nil: every buyer's
	// Status, when set, keeps payments in that status only.
	Status PaymentStatus
	// Before pages back: only payments made before this one (uuid.Nil:
	// from the newest).
	Before uuid.UUID
	Limit  int // 1 to 500; 0 means 100
}

// List lists payments of an event, newest first, without their holds and
// refunds (Get reads those).
func (s *Payments) List(ctx context.Context, org uuid.UUID, f PaymentFilter) ([]Payment, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	rows, err := s.db.Query(ctx, paymentColumns+`
		WHERE p.org_id = $1 AND p.event_id = $2 AND ($3::uuid IS NULL OR p.user_id = $3)
		  AND ($4 = '' OR p.status = $4)
		  AND ($5::uuid IS NULL OR (p.created_at, p.id) < (SELECT created_at, id FROM payments WHERE org_id = $1 AND id = $5))
		ORDER BY p.created_at DESC, p.id DESC LIMIT $6`,
		org, f.Event, nilIfZero(f.User), string(f.Status), nilIfZero(f.Before), f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanPayment)
}

// ByIntent finds the payment of a provider intent, across organizations:
// for a provider event that does not name its payment in its metadata
// (intent ids are the provider's, unique across its accounts).
func (s *Payments) ByIntent(ctx context.Context, intentID string) (org, id uuid.UUID, err error) {
	err = s.db.QueryRow(ctx, `SELECT org_id, id FROM payments WHERE intent_id = $1 ORDER BY created_at DESC LIMIT 1`,
		intentID).Scan(&org, &id)
	return org, id, notFoundIfNoRows(err, "payment")
}

// State reads what the metrics report of the payments table: payments in
// processing and how long the oldest has been, and failed refunds nobody
// retried.
func (s *Payments) State(ctx context.Context) (processing int, oldest time.Duration, refundsFailed int, err error) {
	var secs float64
	err = s.db.QueryRow(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM now() - min(status_at)), 0),
		       (SELECT count(*) FROM refunds WHERE status = 'failed')
		FROM payments WHERE status = 'processing'`).Scan(&processing, &secs, &refundsFailed)
	return processing, time.Duration(secs * float64(time.Second)), refundsFailed, err
}

package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/chart"
	"seatd/internal/pg"
)

// BookingNotice is a queued booking mail (migrations 032, 042): a
// booking's confirmation, the notice of a cancellation of some of its
// tickets, or of a refund of it that succeeded.
type BookingNotice struct {
	Org, Booking uuid.UUID
	ID           int64
	Kind         string      // NoticeConfirmation, NoticeCancellation or NoticeRefund
	Tickets      []uuid.UUID // a cancellation's tickets; those whose prices a refund returns
	// A refund's id, amount and currency.
	Refund      uuid.UUID
	AmountMinor int64
	Currency    string
}

// The kinds of booking mail.
const (
	NoticeConfirmation = "confirmation"
	NoticeCancellation = "cancellation"
	NoticeRefund       = "refund"
)

// BookingDetail is a booking as its mail, its page and its PDF show it:
// the booking, its event and every ticket with the names people read.
type BookingDetail struct {
	Org, Event, Booking uuid.UUID
	OrgName             string
	Reference           string
	Status              string
	To                  string // the customer's address for a box-office sale, else the buyer's
	Holder              string // the customer's name; "" for an online sale
	EventName, Venue    string
	StartsAt            time.Time
	TimeZone            string
	Tickets             []TicketDetail
	// User is the account that bought (web) or sold (box office).
	User      uuid.UUID
	CreatedAt time.Time
	// PaymentID is the online payment that made the booking (uuid.Nil for
	// none); BuyerCancelHours is the event's cutoff for buyers cancelling
	// it themselves (nil: they cannot).
	PaymentID        uuid.UUID
	BuyerCancelHours *int
	// CancelReason and CancelledBy are the last cancellation's reason and
	// acting user (uuid.Nil when not known).
	CancelReason string
	CancelledBy  uuid.UUID
}

// TicketDetail is one ticket as the mail, the page and the PDF show it.
type TicketDetail struct {
	ID, Seat     uuid.UUID
	Section, Row string // section name; "" row for a standing place
	Number       int
	Standing     bool
	SectionLabel string
	Category     string
	PriceMinor   int64
	Currency     string
	Cancelled    bool
	CancelledAt  time.Time
	CancelReason string
}

// BookingMail is the queue of booking mail and the reads that fill it.
type BookingMail struct{ db *pgxpool.Pool }

// NewBookingMail returns the booking mail queue of db.
func NewBookingMail(db *pgxpool.Pool) *BookingMail { return &BookingMail{db: db} }

// InTx runs fn in a transaction: the worker claims notices, enqueues their
// mail and deletes them in one.
func (s *BookingMail) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return inTx(ctx, s.db, fn)
}

// Claim locks up to n queued notices, oldest first, skipping those another
// transaction holds.
func (s *BookingMail) Claim(ctx context.Context, tx pgx.Tx, n int) ([]BookingNotice, error) {
	rows, err := tx.Query(ctx, `
		SELECT org_id, id, booking_id, kind, tickets, coalesce(refund_id, '00000000-0000-0000-0000-000000000000'),
		       coalesce(amount_minor, 0), coalesce(currency, '')
		FROM booking_mail
		ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (BookingNotice, error) {
		var b BookingNotice
		err := r.Scan(&b.Org, &b.ID, &b.Booking, &b.Kind, &b.Tickets, &b.Refund, &b.AmountMinor, &b.Currency)
		return b, err
	})
}

// Done deletes a notice whose mail was enqueued.
func (s *BookingMail) Done(ctx context.Context, tx pgx.Tx, n BookingNotice) error {
	_, err := tx.Exec(ctx, `DELETE FROM booking_mail WHERE org_id = $1 AND id = $2`, n.Org, n.ID)
	return err
}

// Detail reads booking's detail from the pool.
func (s *BookingMail) Detail(ctx context.Context, org, booking uuid.UUID) (BookingDetail, error) {
	return s.Booking(ctx, s.db, org, booking)
}

// Queued is how many notices wait and how long the oldest has.
func (s *BookingMail) Queued(ctx context.Context) (n int, oldest time.Duration, err error) {
	var secs float64
	err = s.db.QueryRow(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM booking_mail`).Scan(&n, &secs)
	return n, time.Duration(secs * float64(time.Second)), err
}

// Booking reads booking's detail through db (the worker's transaction, or
// the pool for a page), the booking and its tickets in one round trip.
func (s *BookingMail) Booking(ctx context.Context, db pg.DBTX, org, booking uuid.UUID) (BookingDetail, error) {
	b := BookingDetail{Org: org, Booking: booking}
	var batch pgx.Batch
	batch.Queue(`
		SELECT b.event_id, o.name, b.reference, b.status, u.email, b.customer_email, b.customer_name,
		       e.name, e.venue, e.starts_at, e.time_zone, b.user_id, b.created_at,
		       coalesce(b.payment_id, '00000000-0000-0000-0000-000000000000'), e.buyer_cancel_hours,
		       coalesce(b.cancel_reason, ''), coalesce(b.cancelled_by, '00000000-0000-0000-0000-000000000000')
		FROM bookings b
		JOIN organizations o ON o.id = b.org_id
		JOIN users u ON u.org_id = b.org_id AND u.id = b.user_id
		JOIN events e ON e.org_id = b.org_id AND e.id = b.event_id
		WHERE b.org_id = $1 AND b.id = $2`, org, booking)
	batch.Queue(`
		SELECT t.id, t.seat_id, sec.name, sec.label, s.row_label, s.number, sec.kind = $3,
		       coalesce(c.name, ''), coalesce(t.price_minor, 0), coalesce(t.currency, ''),
		       coalesce(t.cancelled_at, 'epoch'::timestamptz), coalesce(t.cancel_reason, '')
		FROM tickets t
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		LEFT JOIN event_categories c ON c.org_id = s.org_id AND c.event_id = s.event_id AND c.key = s.category
		WHERE t.org_id = $1 AND t.booking_id = $2
		ORDER BY sec.position, s.idx`, org, booking, chart.GA)
	br := db.SendBatch(ctx, &batch)
	defer func() { _ = br.Close() }()
	var customer, name *string
	err := br.QueryRow().Scan(&b.Event, &b.OrgName, &b.Reference, &b.Status, &b.To,
		&customer, &name, &b.EventName, &b.Venue, &b.StartsAt, &b.TimeZone, &b.User, &b.CreatedAt,
		&b.PaymentID, &b.BuyerCancelHours, &b.CancelReason, &b.CancelledBy)
	if err != nil {
		return b, notFoundIfNoRows(err, "booking")
	}
	b.CreatedAt = b.CreatedAt.UTC()
	if customer != nil {
		b.To = *customer
	}
	if name != nil {
		b.Holder = *name
	}
	rows, err := br.Query()
	if err != nil {
		return b, err
	}
	b.Tickets, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TicketDetail, error) {
		var t TicketDetail
		err := r.Scan(&t.ID, &t.Seat, &t.Section, &t.SectionLabel, &t.Row, &t.Number, &t.Standing, &t.Category,
			&t.PriceMinor, &t.Currency, &t.CancelledAt, &t.CancelReason)
		if t.CancelledAt.Unix() != 0 {
			t.Cancelled = true
			t.CancelledAt = t.CancelledAt.UTC()
		} else {
			t.CancelledAt = time.Time{}
		}
		return t, err
	})
	if err != nil {
		return b, err
	}
	return b, br.Close()
}

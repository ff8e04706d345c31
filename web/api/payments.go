package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// Payments through the JSON API (docs/payments.md): a buyer starts paying
// for their holds, anyone reads their payment, the provider's webhooks
// confirm them, staff retry failed refunds and organizers read the figures.

// PaymentCore is what the payment routes ask of the payment flow;
// *hold.Payments satisfies it.
type PaymentCore interface {
	Start(ctx context.Context, a hold.Actor, event uuid.UUID, key string) (hold.Started, error)
	Get(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Payment, error)
	List(ctx context.Context, a hold.Actor, f store.PaymentFilter) ([]store.Payment, error)
	Webhook(ctx context.Context, body []byte, header string) (hold.Applied, error)
	RetryRefund(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Refund, error)
	FailedRefunds(ctx context.Context, a hold.Actor) ([]store.Refund, error)
	Summary(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.PaymentSummary, error)
	WriteCSV(ctx context.Context, a hold.Actor, event uuid.UUID, w io.Writer) error
}

// Payments starts and reads payments, takes the provider's webhooks, and
// serves the staff's refunds and the organizers' figures.
type Payments struct {
	dec  *httpx.Decoder
	core PaymentCore
	log  *slog.Logger
	// checkout is the buyer's page that pays a payment (PaymentPage), for
	// the test provider's redirect_url; "" with Stripe, whose client
	// secret is answered instead.
	checkout func(id uuid.UUID) string
}

// PaymentPage is the buyer's page that pays payment id (the test
// provider's card page, or the Stripe Payment Element's).
func PaymentPage(id uuid.UUID) string { return "/payments/" + id.String() }

type paymentHoldJSON struct {
	HoldID     uuid.UUID `json:"hold_id"`
	SeatID     uuid.UUID `json:"seat_id"`
	Seat       string    `json:"seat,omitempty"`
	Category   string    `json:"category,omitempty"`
	PriceMinor int64     `json:"price_minor"`
}

type refundJSON struct {
	ID            uuid.UUID `json:"id"`
	PaymentID     uuid.UUID `json:"payment_id"`
	BookingID     uuid.UUID `json:"booking_id,omitzero"`
	Status        string    `json:"status"`
	AmountMinor   int64     `json:"amount_minor"`
	Currency      string    `json:"currency"`
	Reason        string    `json:"reason"`
	Note          string    `json:"note,omitempty"`
	FailureReason string    `json:"failure_reason,omitempty"`
	Attempt       int       `json:"attempt"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func refundView(r store.Refund) refundJSON {
	return refundJSON{ID: r.ID, PaymentID: r.PaymentID, BookingID: r.BookingID, Status: string(r.Status),
		AmountMinor: r.AmountMinor, Currency: r.Currency, Reason: r.Reason, Note: r.Note, FailureReason: r.FailureReason,
		Attempt: r.Attempt, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// PaymentJSON is a payment as the API answers it. ClientSecret (Stripe)
// or RedirectURL (the test provider's card page) are in the answer to
// the buyer's start only.
type PaymentJSON struct {
	ID             uuid.UUID         `json:"id"`
	EventID        uuid.UUID         `json:"event_id"`
	Status         string            `json:"status"`
	AmountMinor    int64             `json:"amount_minor"`
	Currency       string            `json:"currency"`
	HoldIDs        []uuid.UUID       `json:"hold_ids"`
	Holds          []paymentHoldJSON `json:"holds"`
	ClientSecret   string            `json:"client_secret,omitempty"`
	RedirectURL    string            `json:"redirect_url,omitempty"`
	ExpiresAt      time.Time         `json:"expires_at"`
	BookingID      uuid.UUID         `json:"booking_id,omitzero"`
	BookingRef     string            `json:"booking_reference,omitempty"`
	FailureMessage string            `json:"failure_message,omitempty"`
	RefundReason   string            `json:"refund_reason,omitempty"`
	RefundedMinor  int64             `json:"refunded_minor"`
	Refunds        []refundJSON      `json:"refunds"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

func paymentView(p store.Payment) PaymentJSON {
	out := PaymentJSON{ID: p.ID, EventID: p.EventID, Status: string(p.Status), AmountMinor: p.AmountMinor,
		Currency: p.Currency, HoldIDs: make([]uuid.UUID, len(p.Holds)), Holds: make([]paymentHoldJSON, len(p.Holds)),
		ExpiresAt: p.Deadline.UTC(), BookingID: p.BookingID, FailureMessage: p.FailureMessage, RefundReason: p.RefundReason,
		RefundedMinor: p.RefundedMinor, Refunds: make([]refundJSON, len(p.Refunds)), CreatedAt: p.CreatedAt.UTC(),
		UpdatedAt: p.UpdatedAt.UTC()}
	if p.BookingReference != "" {
		out.BookingRef = store.FormatReference(p.BookingReference)
	}
	for i, h := range p.Holds {
		out.HoldIDs[i] = h.HoldID
		out.Holds[i] = paymentHoldJSON{HoldID: h.HoldID, SeatID: h.SeatID, Seat: h.Seat, Category: h.Category, PriceMinor: h.PriceMinor}
	}
	for i, r := range p.Refunds {
		out.Refunds[i] = refundView(r)
	}
	return out
}

// Start begins the buyer's payment for all their active holds of the
// event (an empty body or {}), under their Idempotency-Key: 201 new, 200
// the payment the key began before. With Stripe the answer carries the
// intent's client_secret for the Payment Element; with the test provider
// the redirect_url of its card page.
func (h *Payments) Start(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	key, err := httpx.IdempotencyKey(r)
	if err != nil {
		return err
	}
	var in struct{}
	if err := h.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	st, err := h.core.Start(r.Context(), a, event, key)
	if err != nil {
		return err
	}
	out := paymentView(st.Payment)
	if st.ClientSecret != "" {
		if h.checkout != nil {
			out.RedirectURL = h.checkout(st.Payment.ID)
		} else {
			out.ClientSecret = st.ClientSecret
		}
	}
	status := http.StatusCreated
	if st.Payment.Replayed {
		status = http.StatusOK
	}
	httpx.WriteJSON(w, status, out)
	return nil
}

// Get answers a payment: a buyer's own, or any of the organization's for
// staff; anyone else's is a 404.
func (h *Payments) Get(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "payment")
	if err != nil {
		return err
	}
	p, err := h.core.Get(r.Context(), a, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, paymentView(p))
	return nil
}

// List lists an event's payments for staff, newest first: {payments}, at
// most 100; ?status= keeps one status, ?before=<payment id> pages back.
func (h *Payments) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	f := store.PaymentFilter{Event: event, Status: store.PaymentStatus(r.URL.Query().Get("status"))}
	if !validPaymentStatus(f.Status) {
		return &apperr.Error{Code: apperr.Invalid, Message: "status must be a payment status",
			Fields: map[string]string{"status": "must be requires_payment, processing, succeeded, failed, canceled, refunded or partially_refunded"}}
	}
	if b := r.URL.Query().Get("before"); b != "" {
		if f.Before, err = uuid.Parse(b); err != nil {
			return &apperr.Error{Code: apperr.Invalid, Message: "before must be a payment id",
				Fields: map[string]string{"before": "must be an id"}}
		}
	}
	return httpx.List(w, "payments", paymentView)(h.core.List(r.Context(), a, f))
}

func validPaymentStatus(s store.PaymentStatus) bool {
	switch s {
	case "", "requires_payment", "processing", "succeeded", "failed", "canceled", "refunded", "partially_refunded":
		return true
	}
	return false
}

// Webhook is the payment provider's endpoint (POST /webhooks/stripe; no
// session). The body is read up to payment.MaxEventBytes and verified
// against its signature: a missing, wrong or stale signature is a 400 and
// changes nothing (the provider sends the event again); an event applied,
// a duplicate and one seatd ignores are a 200; a failure of ours is a 500
// (the provider sends it again).
func (h *Payments) Webhook(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBodyUpTo(w, r, payment.MaxEventBytes)
	if err != nil {
		return err
	}
	res, err := h.core.Webhook(r.Context(), body, r.Header.Get(payment.SignatureHeader))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"result": res.Result})
	return nil
}

// FailedRefunds lists the organization's failed refunds for staff:
// {refunds}, each to retry or settle with its buyer.
func (h *Payments) FailedRefunds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "refunds", refundView)(h.core.FailedRefunds(r.Context(), a))
}

// RetryRefund sends a failed refund again (staff): 200 with the refund as
// it stands after the provider's answer.
func (h *Payments) RetryRefund(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := idAndNoInput(h.dec, w, r, "refund")
	if err != nil {
		return err
	}
	ref, err := h.core.RetryRefund(r.Context(), a, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, refundView(ref))
	return nil
}

type paymentSummaryJSON struct {
	Category      string `json:"category"`
	Name          string `json:"name"`
	Currency      string `json:"currency"`
	PaidMinor     int64  `json:"paid_minor"`
	PaidSeats     int    `json:"paid_seats"`
	PendingMinor  int64  `json:"pending_minor"`
	PendingSeats  int    `json:"pending_seats"`
	RefundedMinor int64  `json:"refunded_minor"`
	RefundedSeats int    `json:"refunded_seats"`
}

// Summary answers an event's payment figures per price category (staff):
// {categories}.
func (h *Payments) Summary(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return httpx.List(w, "categories", func(s store.PaymentSummary) paymentSummaryJSON {
		return paymentSummaryJSON(s)
	})(h.core.Summary(r.Context(), a, event))
}

// CSV streams an event's payments as payments.csv (organizers).
func (h *Payments) CSV(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	out := &csvAnswer{w: w, name: "payments-" + event.String() + ".csv"}
	err = h.core.WriteCSV(r.Context(), a, event, out)
	if err != nil && !out.started {
		return err // checked before a byte was written: an answer of its own
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "export failed midway", "kind", "payments", "org", a.Org, "event", event, "err", err)
	}
	return nil
}

// csvAnswer sends the CSV headers with the first byte of the file, so an
// error found before it is still answered with its status.
type csvAnswer struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (c *csvAnswer) Write(p []byte) (int, error) {
	if !c.started {
		c.started = true
		c.w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		c.w.Header().Set("Content-Disposition", `attachment; filename="`+c.name+`"`)
		c.w.WriteHeader(http.StatusOK)
	}
	return c.w.Write(p)
}

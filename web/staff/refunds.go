package staff

import (
	"cmp"
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// Online payments on the staff pages: the dashboard's figures per
// category, and the failed refunds with their retry.

// PaymentReports is what the staff pages ask of the payment flow;
// *hold.Payments satisfies it.
type PaymentReports interface {
	Summary(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.PaymentSummary, error)
	FailedRefunds(ctx context.Context, a hold.Actor) ([]store.Refund, error)
	RetryRefund(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Refund, error)
}

// revenue is an event's payment figures as the dashboard shows them.
func revenue(ctx context.Context, pays PaymentReports, a hold.Actor, event uuid.UUID) ([]views.RevenueRow, error) {
	sums, err := pays.Summary(ctx, a, event)
	if err != nil {
		return nil, err
	}
	var rows []views.RevenueRow
	for _, s := range sums {
		if s.PaidSeats+s.PendingSeats+s.RefundedSeats == 0 && s.PaidMinor+s.PendingMinor+s.RefundedMinor == 0 {
			continue
		}
		rows = append(rows, views.RevenueRow{Category: cmp.Or(s.Name, s.Category, "Refunds made elsewhere"),
			Paid: money.Format(s.PaidMinor, s.Currency), PaidSeats: s.PaidSeats,
			Pending: money.Format(s.PendingMinor, s.Currency), PendingSeats: s.PendingSeats,
			Refunded: money.Format(s.RefundedMinor, s.Currency), RefundedSeats: s.RefundedSeats})
	}
	return rows, nil
}

// Refunds lists the organization's failed refunds for staff, and retries
// them.
type Refunds struct {
	*frame
	pays PaymentReports
}

// Page lists the failed refunds.
func (p *Refunds) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	rs, err := p.pays.FailedRefunds(r.Context(), a)
	if err != nil {
		return err
	}
	out := make([]views.FailedRefund, len(rs))
	for i, x := range rs {
		out[i] = views.FailedRefund{ID: x.ID.String(), Amount: money.Format(x.AmountMinor, x.Currency), Note: x.Note,
			Failure: x.FailureReason, Attempt: x.Attempt, UpdatedAt: x.UpdatedAt.UTC().Format("2006-01-02 15:04 MST")}
		if x.BookingID != uuid.Nil {
			out[i].Booking = "/box-office/bookings/" + x.BookingID.String()
		}
	}
	p.render.Render(w, r, http.StatusOK, views.RefundsPage(p.render.Meta(r, "Failed refunds"), out))
	return nil
}

// Retry sends a failed refund again and goes back to the list with what
// the provider answered.
func (p *Refunds) Retry(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "refund")
	if err != nil {
		return err
	}
	if _, err := httpx.Form(w, r); err != nil {
		return err
	}
	ref, err := p.pays.RetryRefund(r.Context(), a, id)
	if err != nil {
		return p.flashAndReturn(w, r, err, "", "/box-office/refunds")
	}
	return p.backWith(w, r, "/box-office/refunds", "Retried:"+refundNote(&ref))
}

package pages

import (
	"context"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// PaymentCore is what the payment pages ask of the payment flow;
// *hold.Payments satisfies it.
type PaymentCore interface {
	Start(ctx context.Context, a hold.Actor, event uuid.UUID, key string) (hold.Started, error)
	Get(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Payment, error)
	SecretOf(ctx context.Context, a hold.Actor, pay store.Payment) (string, error)
}

// TestCheckout confirms a payment on the embedded test provider's card
// page; *payment.TestProvider satisfies it.
type TestCheckout interface {
	Confirm(ctx context.Context, intentID, clientSecret string, card payment.Card) (payment.Intent, error)
}

// Payment is the buyer's side of paying (docs/payments.md): the page that
// pays (the test provider's card form, or Stripe's Payment Element) and
// the page that waits for the provider's confirmation to make the booking.
// The booking is never made here: only the provider's webhook makes it.
type Payment struct {
	render  Renderer
	pays    PaymentCore
	card    TestCheckout // nil with Stripe
	stripe  string       // the publishable key, with Stripe
	flash   Flash
	visible VisibleEvents
}

// waitRefresh is how often the waiting page reloads, in seconds: the
// confirmation usually comes within one.
const waitRefresh = 2

func paymentURL(id uuid.UUID) string  { return "/payments/" + id.String() }
func waitURL(id uuid.UUID) string     { return "/payments/" + id.String() + "/processing" }
func eventURL(id uuid.UUID) string    { return "/e/" + id.String() }
func bookingURL(id uuid.UUID) string  { return "/bookings/" + id.String() }
func (p *Payment) testProvider() bool { return p.card != nil }

// payment reads the buyer's payment the path names.
func (p *Payment) payment(r *http.Request, a hold.Actor) (store.Payment, error) {
	id, err := httpx.PathID(r, "payment")
	if err != nil {
		return store.Payment{}, err
	}
	return p.pays.Get(r.Context(), a, id)
}

// Page is the page that pays the buyer's payment; a payment past paying
// goes to the waiting page (or its booking).
func (p *Payment) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	pay, err := p.payment(r, a)
	if err != nil {
		return err
	}
	if pay.BookingID != uuid.Nil || !payable(pay.Status) {
		http.Redirect(w, r, waitURL(pay.ID), http.StatusSeeOther)
		return nil
	}
	secret, err := p.pays.SecretOf(r.Context(), a, pay)
	if err != nil {
		return err
	}
	amount, what := money.Format(pay.AmountMinor, pay.Currency), p.describe(r.Context(), a, pay)
	if !p.testProvider() {
		w.Header().Set("Content-Security-Policy", httpx.StripeContentSecurityPolicy)
		p.render.Render(w, r, http.StatusOK, views.StripePayPage(p.render.Meta(r, "Pay"), views.StripePay{
			PublishableKey: p.stripe, ClientSecret: secret, ReturnURL: waitURL(pay.ID), Amount: amount, Description: what,
			CartURL: eventURL(pay.EventID)}))
		return nil
	}
	f := p.cardForm(pay, secret, amount, what)
	if pay.Status == store.PaymentFailed {
		f.Error = pay.FailureMessage + " Try another card."
	}
	p.render.Render(w, r, http.StatusOK, views.TestCardPage(p.render.Meta(r, "Pay"), f))
	return nil
}

// payable: the payment waits for the buyer to pay (again).
func payable(s store.PaymentStatus) bool {
	return s == store.PaymentRequiresPayment || s == store.PaymentFailed
}

func (p *Payment) cardForm(pay store.Payment, secret, amount, what string) views.TestCardForm {
	f := views.TestCardForm{Action: paymentURL(pay.ID) + "/card", IntentID: pay.IntentID, ClientSecret: secret,
		Amount: amount, Description: what}
	for _, c := range payment.TestCards() {
		f.Cards = append(f.Cards, views.TestCard{Number: c.Number, Outcome: c.Outcome})
	}
	return f
}

// describe says what the payment is for: the event and its seats.
func (p *Payment) describe(ctx context.Context, a hold.Actor, pay store.Payment) string {
	name := ""
	if ev, err := p.visible.Event(ctx, a, pay.EventID); err == nil {
		name = ev.Name
	}
	seats := strconv.Itoa(len(pay.Holds)) + " seats"
	if len(pay.Holds) == 1 {
		seats = "1 seat"
	}
	if len(pay.Holds) > 0 && len(pay.Holds) <= 6 {
		seats += ":"
		for i, h := range pay.Holds {
			if i > 0 {
				seats += ","
			}
			seats += " " + h.Seat
		}
	}
	if name == "" {
		return seats
	}
	return name + " · " + seats
}

// Card is the test provider's card form posted: the provider decides by
// the test card and confirms through seatd's own webhook endpoint, then
// the buyer waits for the booking. A decline sends the buyer back to
// their seats (still held) with the reason; card details that are wrong
// show the form again.
func (p *Payment) Card(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if !p.testProvider() {
		return apperr.E(apperr.NotFound, "payments are taken by Stripe here")
	}
	pay, err := p.payment(r, a)
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	card := payment.Card{Number: v.Get("number"), Expiry: v.Get("expiry"), CVC: v.Get("cvc"), Name: v.Get("name")}
	_, err = p.card.Confirm(r.Context(), pay.IntentID, v.Get("client_secret"), card)
	e, domain := httpx.DomainError(err)
	switch {
	case err == nil:
		http.Redirect(w, r, waitURL(pay.ID), http.StatusSeeOther)
		return nil
	case !domain:
		return err
	case e.Code == apperr.Invalid:
		f := p.cardForm(pay, v.Get("client_secret"), money.Format(pay.AmountMinor, pay.Currency), p.describe(r.Context(), a, pay))
		f.Number, f.Expiry, f.Name, f.Error, f.Fields = card.Number, card.Expiry, card.Name, e.Message, e.Fields
		p.render.Render(w, r, http.StatusUnprocessableEntity, views.TestCardPage(p.render.Meta(r, "Pay"), f))
		return nil
	case e.Code == apperr.PaymentDeclined:
		p.flash.Flash(r.Context(), e.Message+" Your seats are still held for you until "+
			pay.Deadline.UTC().Format("15:04 MST")+": pay again with another card.")
	case e.Code == apperr.NotFound:
		return err
	default:
		p.flash.Flash(r.Context(), e.Message)
	}
	http.Redirect(w, r, eventURL(pay.EventID), http.StatusSeeOther)
	return nil
}

// Wait is the page after paying: it reloads until the provider's
// confirmation made the booking, and then sends the buyer to it. A
// payment declined meanwhile sends them back to their seats; one that
// ended without a booking (canceled, or refunded because a seat was
// taken) says why.
func (p *Payment) Wait(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	pay, err := p.payment(r, a)
	if err != nil {
		return err
	}
	if pay.BookingID != uuid.Nil {
		http.Redirect(w, r, bookingURL(pay.BookingID), http.StatusSeeOther)
		return nil
	}
	wait := views.PaymentWait{Status: string(pay.Status), Amount: money.Format(pay.AmountMinor, pay.Currency),
		CartURL: eventURL(pay.EventID)}
	switch pay.Status {
	case store.PaymentRequiresPayment, store.PaymentProcessing:
		wait.Waiting = true
	case store.PaymentSucceeded:
		// Paid: the booking is being written (or the refund's reason is).
		wait.Waiting = pay.RefundReason == ""
		wait.Message = pay.RefundReason
	case store.PaymentFailed:
		p.flash.Flash(r.Context(), pay.FailureMessage+" Your seats are still held for you: pay again with another card.")
		http.Redirect(w, r, eventURL(pay.EventID), http.StatusSeeOther)
		return nil
	case store.PaymentCanceled:
		wait.Message = "This payment was canceled and nothing was taken. Pick your seats and pay again."
	default: // refunded without a booking
		wait.Message = pay.RefundReason
		if wait.Message == "" {
			wait.Message = "This payment was refunded."
		}
	}
	meta := p.render.Meta(r, "Payment")
	if wait.Waiting {
		meta.Refresh = waitRefresh
	}
	p.render.Render(w, r, http.StatusOK, views.PaymentWaitPage(meta, wait))
	return nil
}

// pay starts (or resumes, under the checkout's key) the buyer's payment
// for their holds of the event and sends them to its page.
func (p *Payment) pay(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, key string) error {
	st, err := p.pays.Start(r.Context(), a, event, key)
	if err != nil {
		return err
	}
	http.Redirect(w, r, paymentURL(st.Payment.ID), http.StatusSeeOther)
	return nil
}

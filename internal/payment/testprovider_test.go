package payment_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/testsvc"
)

// The test provider's events go over HTTP to an endpoint that verifies
// them with payment.Verifier, as seatd's own POST /webhooks/stripe will.

const expiry = "12/99"

func newTestProvider(t *testing.T, e *endpoint, ledger payment.Ledger, settleAfter time.Duration) *payment.TestProvider {
	t.Helper()
	p, err := payment.NewTestProvider(payment.TestProviderConfig{WebhookURL: e.URL(), WebhookSecret: whsec,
		Ledger: ledger, SettleAfter: settleAfter})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run starts p's worker for the test and waits for it to end afterwards.
func run(t *testing.T, p *payment.TestProvider) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func create(t *testing.T, p payment.Provider, amount int64) payment.Intent {
	t.Helper()
	pay := uuid.NewString()
	in, err := p.Create(t.Context(), payment.CreateRequest{PaymentID: pay, OrgID: "org", EventID: "ev",
		AmountMinor: amount, Currency: "EUR", Description: "2 seats", IdempotencyKey: "pay_" + pay})
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != payment.RequiresPayment || in.ClientSecret == "" || in.Currency != "eur" || in.PaymentID != pay {
		t.Fatalf("created %+v", in)
	}
	return in
}

func card(number string) payment.Card {
	return payment.Card{Number: number, Expiry: expiry, CVC: "123", Name: "Ada Lovelace"}
}

func wantTypes(t *testing.T, e *endpoint, want ...payment.EventType) {
	t.Helper()
	if got := e.types(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestTestProviderSucceedingCard(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 0)
	in := create(t, p, 4500)
	got, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card("4242 4242 4242 4242"))
	if err != nil || got.Status != payment.Succeeded {
		t.Fatalf("confirm: %+v %v", got, err)
	}
	// Delivered and verified before Confirm returned.
	wantTypes(t, e, payment.EventIntentSucceeded)
	ev := e.got()[0]
	if ev.IntentID != in.ID || ev.PaymentID != in.PaymentID || ev.Status != payment.Succeeded || ev.AmountMinor != 4500 || ev.Currency != "eur" {
		t.Errorf("event %+v", ev)
	}
	// A second submit of the form changes nothing and sends nothing.
	if again, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardDeclined)); err != nil || again.Status != payment.Succeeded {
		t.Errorf("second confirm: %+v %v", again, err)
	}
	wantTypes(t, e, payment.EventIntentSucceeded)
	if r, err := p.Retrieve(t.Context(), in.ID); err != nil || r.Status != payment.Succeeded {
		t.Errorf("retrieve: %+v %v", r, err)
	}
}

func TestTestProviderDeclinedCard(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 0)
	in := create(t, p, 4500)
	got, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card("4000-0000-0000-0002"))
	if codeOf(err) != apperr.PaymentDeclined || got.Status != payment.Failed || got.FailureMessage == "" {
		t.Fatalf("confirm: %+v %v, want a decline", got, err)
	}
	wantTypes(t, e, payment.EventIntentFailed)
	if ev := e.got()[0]; ev.Status != payment.Failed || ev.FailureMessage != got.FailureMessage || ev.IntentID != in.ID {
		t.Errorf("event %+v", ev)
	}
	if r, _ := p.Retrieve(t.Context(), in.ID); r.Status != payment.Failed {
		t.Errorf("retrieve after decline: %+v", r)
	}
	// The buyer tries again with a good card: a new attempt, a new event id.
	if got, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardSucceeds)); err != nil || got.Status != payment.Succeeded {
		t.Fatalf("retry: %+v %v", got, err)
	}
	wantTypes(t, e, payment.EventIntentFailed, payment.EventIntentSucceeded)
	if evs := e.got(); evs[0].ID == evs[1].ID {
		t.Errorf("both attempts' events have id %s", evs[0].ID)
	}
}

func TestTestProviderDelayedCard(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 300*time.Millisecond)
	run(t, p)
	in := create(t, p, 4500)
	got, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardDelayed))
	if err != nil || got.Status != payment.Processing {
		t.Fatalf("confirm: %+v %v", got, err)
	}
	wantTypes(t, e, payment.EventIntentProcessing)
	testsvc.Eventually(t, 5*time.Second, "the delayed payment's success delivered", func() bool { return len(e.got()) == 2 })
	wantTypes(t, e, payment.EventIntentProcessing, payment.EventIntentSucceeded)
	if ev := e.got()[1]; ev.IntentID != in.ID || ev.Status != payment.Succeeded || ev.PaymentID != in.PaymentID {
		t.Errorf("success event %+v", ev)
	}
	if r, _ := p.Retrieve(t.Context(), in.ID); r.Status != payment.Succeeded {
		t.Errorf("retrieve: %+v", r)
	}
	if n := p.Pending(); n != 0 {
		t.Errorf("%d deliveries still queued", n)
	}
}

// TestTestProviderDelayedCardAfterRestart: the process that took the
// delayed card dies before its success is sent. A new test provider on the
// same ledger (the payments table, in seatd) answers Retrieve from what was
// stored: processing until the time has come, succeeded after — which is
// what the reconciler asks when the webhook never came.
func TestTestProviderDelayedCardAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	ledger := payment.NewMemoryLedger()
	first := newTestProvider(t, e, ledger, 500*time.Millisecond) // its Run never starts: it "dies"
	in := create(t, first, 2000)
	if got, err := first.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardDelayed)); err != nil || got.Status != payment.Processing {
		t.Fatalf("confirm: %+v %v", got, err)
	}

	second := newTestProvider(t, e, ledger, time.Hour) // the restarted process; its own setting does not matter
	run(t, second)
	if r, err := second.Retrieve(t.Context(), in.ID); err != nil || r.Status != payment.Processing {
		t.Fatalf("retrieve at once: %+v %v", r, err)
	}
	testsvc.Eventually(t, 5*time.Second, "the delayed payment read as succeeded", func() bool {
		r, err := second.Retrieve(t.Context(), in.ID)
		return err == nil && r.Status == payment.Succeeded
	})
	// It is paid for every purpose: it can be refunded.
	if _, err := second.Refund(t.Context(), payment.RefundRequest{IntentID: in.ID, IdempotencyKey: "r"}); err != nil {
		t.Errorf("refund after restart: %v", err)
	}
	wantTypes(t, e, payment.EventIntentProcessing, payment.EventChargeRefunded)
}

func TestTestProviderRefunds(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 0)
	in := create(t, p, 4500)
	refund := func(key string, amount int64) (payment.Refund, error) {
		return p.Refund(t.Context(), payment.RefundRequest{IntentID: in.ID, PaymentID: in.PaymentID, AmountMinor: amount, IdempotencyKey: key})
	}
	if _, err := refund("early", 0); codeOf(err) != apperr.Conflict {
		t.Errorf("refund before payment: %v, want conflict", err)
	}
	if _, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardSucceeds)); err != nil {
		t.Fatal(err)
	}

	part, err := refund("r1", 1500)
	if err != nil || part.AmountMinor != 1500 || part.Status != payment.RefundSucceeded || part.IntentID != in.ID {
		t.Fatalf("partial refund: %+v %v", part, err)
	}
	if again, err := refund("r1", 1500); err != nil || again != part {
		t.Errorf("the same refund again: %+v %v, want %+v", again, err, part)
	}
	if _, err := refund("r1", 500); codeOf(err) != apperr.IdempotencyMismatch {
		t.Errorf("key r1 with another amount: %v", err)
	}
	if _, err := refund("r2", 5000); codeOf(err) != apperr.Invalid {
		t.Errorf("refund beyond the payment: %v", err)
	}
	rest, err := refund("r3", 0)
	if err != nil || rest.AmountMinor != 3000 || rest.ID == part.ID {
		t.Fatalf("refund of the rest: %+v %v", rest, err)
	}
	if _, err := refund("r4", 0); codeOf(err) != apperr.Conflict {
		t.Errorf("refund of a refunded payment: %v", err)
	}

	wantTypes(t, e, payment.EventIntentSucceeded, payment.EventChargeRefunded, payment.EventChargeRefunded)
	evs := e.got()
	if ev := evs[1]; ev.AmountRefunded != 1500 || ev.Refund == nil || ev.Refund.ID != part.ID || ev.Refund.AmountMinor != 1500 {
		t.Errorf("first charge.refunded %+v %+v", ev, ev.Refund)
	}
	if ev := evs[2]; ev.AmountRefunded != 4500 || ev.Refund == nil || ev.Refund.ID != rest.ID || ev.IntentID != in.ID || ev.PaymentID != in.PaymentID {
		t.Errorf("second charge.refunded %+v %+v", ev, ev.Refund)
	}
}

func TestTestProviderCancel(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 0)
	in := create(t, p, 4500)
	got, err := p.Cancel(t.Context(), in.ID)
	if err != nil || got.Status != payment.Canceled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	wantTypes(t, e, payment.EventIntentCanceled)
	if _, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardSucceeds)); codeOf(err) != apperr.Conflict {
		t.Errorf("paying a canceled intent: %v", err)
	}
	if _, err := p.Cancel(t.Context(), in.ID); codeOf(err) != apperr.Conflict {
		t.Errorf("canceling twice: %v", err)
	}

	paid := create(t, p, 100)
	if _, err := p.Confirm(t.Context(), paid.ID, paid.ClientSecret, card(payment.CardSucceeds)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Cancel(t.Context(), paid.ID); codeOf(err) != apperr.Conflict {
		t.Errorf("canceling a paid intent: %v", err)
	}
}

// TestTestProviderCreateIdempotent: the same key answers the first intent;
// the same key for another payment is refused.
func TestTestProviderCreateIdempotent(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 0)
	req := payment.CreateRequest{PaymentID: "p1", AmountMinor: 900, Currency: "eur", IdempotencyKey: "pay_p1_" + uuid.NewString()}
	a, err := p.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Create(t.Context(), req)
	if err != nil || a != b {
		t.Errorf("repeat: %+v %v, want %+v", b, err, a)
	}
	req.AmountMinor = 901
	if _, err := p.Create(t.Context(), req); codeOf(err) != apperr.IdempotencyMismatch {
		t.Errorf("same key, other amount: %v", err)
	}
	if len(e.got()) != 0 {
		t.Errorf("creating sent events: %v", e.types())
	}
}

// TestTestProviderConfirmChecks: the card form's fields are checked as a
// card form would, and only the holder of the client secret may pay.
func TestTestProviderConfirmChecks(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	p := newTestProvider(t, e, nil, 0)
	in := create(t, p, 4500)
	for _, tc := range []struct {
		name  string
		card  payment.Card
		field string
	}{
		{"not a card number", payment.Card{Number: "4242 4242 4242 4241", Expiry: expiry, CVC: "123"}, "number"},
		{"a real card", payment.Card{Number: "5555 5555 5555 4444", Expiry: expiry, CVC: "123"}, "number"},
		{"expired", payment.Card{Number: payment.CardSucceeds, Expiry: "01/20", CVC: "123"}, "expiry"},
		{"no expiry", payment.Card{Number: payment.CardSucceeds, CVC: "123"}, "expiry"},
		{"short CVC", payment.Card{Number: payment.CardSucceeds, Expiry: expiry, CVC: "12"}, "cvc"},
	} {
		_, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, tc.card)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || e.Fields[tc.field] == "" {
			t.Errorf("%s: %v, want invalid %s", tc.name, err, tc.field)
		}
	}
	if _, err := p.Confirm(t.Context(), in.ID, "pi_other_secret_x", card(payment.CardSucceeds)); codeOf(err) != apperr.NotFound {
		t.Errorf("another client secret: %v, want not_found", err)
	}
	if _, err := p.Confirm(t.Context(), "pi_test_none", in.ClientSecret, card(payment.CardSucceeds)); codeOf(err) != apperr.NotFound {
		t.Errorf("unknown intent: %v, want not_found", err)
	}
	if r, _ := p.Retrieve(t.Context(), in.ID); r.Status != payment.RequiresPayment || len(e.got()) != 0 {
		t.Errorf("after refused confirmations: %+v, events %v", r, e.types())
	}
}

// TestTestProviderRetriesDelivery: an endpoint that fails (500) gets the
// event again from Run, with the same event id, and the wrong secret is
// refused by the verifier (400) — the signature is really checked.
func TestTestProviderRetriesDelivery(t *testing.T) {
	t.Parallel()
	e := newEndpoint(t, whsec)
	e.mu.Lock()
	e.failNext = 1
	e.mu.Unlock()
	p := newTestProvider(t, e, nil, 0)
	run(t, p)
	in := create(t, p, 4500)
	if _, err := p.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardSucceeds)); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "the event delivered again", func() bool { return len(e.got()) == 1 })
	wantTypes(t, e, payment.EventIntentSucceeded)

	other := newEndpoint(t, "whsec_anotherSecret")
	q := newTestProvider(t, other, nil, 0)
	in = create(t, q, 100)
	if _, err := q.Confirm(t.Context(), in.ID, in.ClientSecret, card(payment.CardSucceeds)); err != nil {
		t.Fatal(err)
	}
	other.mu.Lock()
	defer other.mu.Unlock()
	if other.refused != 1 || len(other.events) != 0 {
		t.Errorf("an endpoint with another secret: %d refused, %d accepted", other.refused, len(other.events))
	}
}

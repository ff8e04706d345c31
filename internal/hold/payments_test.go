package hold_test

import (
	"context"
	"errors"
	"net"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
)

// TestPaymentBuysWithTheTestProvider: a buyer holds a front and a back
// seat, starts paying (the amount is the prices', the holds are kept to
// the payment's deadline and marked paying, and cannot be released by
// the buyer), pays on the test provider's card page, and the signed
// webhook makes the booking at the prices paid; the same key answers the
// same payment, before and after.
func TestPaymentBuysWithTheTestProvider(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{ttl: 20 * time.Minute})
	ctx := context.Background()
	hs := e.hold(0, e.seats[0], e.seats[10])

	st := e.start(0, "pay-1")
	p := st.Payment
	if p.AmountMinor != 7500 || p.Currency != "EUR" || p.Status != store.PaymentRequiresPayment || p.IntentID == "" ||
		st.ClientSecret == "" || len(p.Holds) != 2 || p.Provider != store.ProviderTest {
		t.Fatalf("started %+v (secret %q)", p, st.ClientSecret)
	}
	if d := time.Until(p.Deadline); d < 19*time.Minute || d > 21*time.Minute {
		t.Errorf("deadline in %v, want the 20m TTL", d)
	}
	samePaymentAsStored(t, e, p)
	mine, err := e.a.Holds.Mine(ctx, e.buyer(0), e.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range mine {
		if h.PaymentID != p.ID || !h.HeldUntil.Equal(p.Deadline) {
			t.Errorf("hold %s: payment %s, held until %v; want %s until %v", h.ID, h.PaymentID, h.HeldUntil, p.ID, p.Deadline)
		}
	}
	if _, err := e.a.Holds.Release(ctx, e.buyer(0), hs[0].ID, ""); !isCode(err, apperr.Conflict) {
		t.Errorf("buyer released a hold being paid for: %v", err)
	}
	again := e.start(0, "pay-1")
	if again.Payment.ID != p.ID || !again.Payment.Replayed || again.ClientSecret != st.ClientSecret {
		t.Errorf("same key: payment %s (replayed %v), want %s", again.Payment.ID, again.Payment.Replayed, p.ID)
	}
	if _, err := e.pays.Start(ctx, e.buyer(0), uuidOther(e), "pay-1"); err == nil {
		t.Error("the key of one event's payment answered for another event")
	}

	if _, err := e.card(st, payment.CardSucceeds); err != nil {
		t.Fatal(err)
	}
	p = e.payment(p.ID)
	if p.Status != store.PaymentSucceeded || p.BookingReference == "" {
		t.Fatalf("after the card: %+v", p)
	}
	b, err := e.a.BoxOffice.Booking(ctx, e.buyer(0), p.BookingID)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Tickets) != 2 || b.PaymentID != p.ID || b.UserID != e.tn.Buyers[0].ID {
		t.Fatalf("booking %+v", b)
	}
	paid := map[int64]int{}
	for _, tk := range b.Tickets {
		paid[tk.PriceMinor]++
	}
	if paid[5000] != 1 || paid[2500] != 1 {
		t.Errorf("tickets paid %v, want one at 5000 and one at 2500", paid)
	}
	if n := count(t, e.a, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'booking.paid' AND entity_id = $2`, e.tn.Org.ID, p.ID); n != 1 {
		t.Errorf("%d booking.paid audit rows", n)
	}
	if again := e.start(0, "pay-1"); again.Payment.BookingID != p.BookingID || again.ClientSecret != "" {
		t.Errorf("same key after paying: %+v, secret %q", again.Payment, again.ClientSecret)
	}
	if got := testutil.ToFloat64(e.m.Outcomes.WithLabelValues("booked")); got != 1 {
		t.Errorf("booked %v", got)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// uuidOther is another on-sale event of the environment's organization.
func uuidOther(e *payEnv) uuid.UUID {
	e.t.Helper()
	ev := chartEvent(e.t, e.a, e.tn, nil)
	if err := setStatus(e.t, e.a, e.tn, ev.ID, "on_sale"); err != nil {
		e.t.Fatal(err)
	}
	return ev.ID
}

// TestPaymentDeclinedThenPaid: a declined card records the decline and
// leaves the holds (still marked, to the deadline); the buyer tries again
// and pays.
func TestPaymentDeclinedThenPaid(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{})
	e.hold(1, e.seats[1])
	st := e.start(1, "k")
	if _, err := e.card(st, payment.CardDeclined); !isCode(err, apperr.PaymentDeclined) {
		t.Fatalf("declined card: %v", err)
	}
	p := e.payment(st.Payment.ID)
	if p.Status != store.PaymentFailed || p.FailureMessage == "" {
		t.Fatalf("after a decline: %+v", p)
	}
	if n := activeHolds(t, e.a, e.ev.ID)[e.seats[1]]; n != 1 {
		t.Fatalf("%d active holds on the seat after a decline", n)
	}
	if n := count(t, e.a, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'payment.failed'`, e.tn.Org.ID); n != 1 {
		t.Errorf("%d payment.failed audit rows", n)
	}
	if _, err := e.card(st, payment.CardSucceeds); err != nil {
		t.Fatal(err)
	}
	if p := e.payment(st.Payment.ID); p.Status != store.PaymentSucceeded || p.BookingReference == "" {
		t.Fatalf("after paying: %+v", p)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentProviderErrorLeavesHolds: a provider that does not answer
// makes Start fail with provider_unavailable and leaves nothing behind:
// the holds as they were, no payment; the same key then works with a
// provider that answers (stripe-mock).
func TestPaymentProviderErrorLeavesHolds(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	e := newPayEnv(t, payOpts{stripe: true, stripeBase: closed})
	ctx := context.Background()
	hs := e.hold(0, e.seats[2], e.seats[3])
	before, err := e.a.Holds.Mine(ctx, e.buyer(0), e.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.pays.Start(ctx, e.buyer(0), e.ev.ID, "k1")
	if !isCode(err, apperr.ProviderUnavailable) {
		t.Fatalf("start with the provider down: %v", err)
	}
	after, err := e.a.Holds.Mine(ctx, e.buyer(0), e.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("%d holds after, %d before", len(after), len(before))
	}
	for i := range after {
		if after[i].ID != before[i].ID || !after[i].HeldUntil.Equal(before[i].HeldUntil) || after[i].PaymentID != uuid.Nil {
			t.Errorf("hold changed: %+v, was %+v", after[i], before[i])
		}
	}
	if n := count(t, e.a, `SELECT count(*) FROM payments WHERE org_id = $1`, e.tn.Org.ID); n != 0 {
		t.Errorf("%d payments left behind", n)
	}
	if got := testutil.ToFloat64(e.m.Outcomes.WithLabelValues("provider_error")); got != 1 {
		t.Errorf("provider_error %v", got)
	}

	up := hold.NewPayments(e.a.Engine, payment.NewStripe(payment.StripeConfig{SecretKey: "sk_test_seatd",
		APIBase: stripeMock(t), Timeout: 5 * time.Second}), payment.NewVerifier(e.secret),
		hold.PaymentOptions{Provider: store.ProviderStripe}, e.m)
	st, err := up.Start(ctx, e.buyer(0), e.ev.ID, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Payment.IntentID == "" || st.ClientSecret == "" || len(st.Payment.Holds) != len(hs) {
		t.Fatalf("started %+v", st)
	}
	samePaymentAsStored(t, e, st.Payment)
}

// samePaymentAsStored: Start answers the payment as it writes it, without
// reading it back; the buyer's read of it afterwards must be the same.
func samePaymentAsStored(t *testing.T, e *payEnv, p store.Payment) {
	t.Helper()
	got, err := e.pays.Get(context.Background(), e.buyer(0), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, got) {
		t.Errorf("Start answered\n%+v\nread back\n%+v", p, got)
	}
}

func stripeMock(t *testing.T) string {
	t.Helper()
	u := os.Getenv("SEATD_STRIPE_MOCK_URL")
	if u == "" {
		t.Fatal("SEATD_STRIPE_MOCK_URL is not set")
	}
	return u
}

// TestPaymentWebhookSignature: the endpoint refuses a delivery whose
// signature is missing, made with another secret, or too old (400,
// counted), and changes nothing; the same body well signed is applied.
func TestPaymentWebhookSignature(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	e.hold(0, e.seats[4])
	p := e.start(0, "k").Payment
	body := intentEvent("evt_sig_1", payment.EventIntentSucceeded, p, time.Now(), "succeeded", "")
	bad := map[string]string{
		"none":          "",
		"other secret":  webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_other"}).Header,
		"ten years old": webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: e.secret, Timestamp: time.Now().Add(-10 * time.Minute)}).Header,
		"another body": webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
			Payload: intentEvent("evt_sig_2", payment.EventIntentFailed, p, time.Now(), "requires_payment_method", "no"), Secret: e.secret}).Header,
	}
	for name, header := range bad {
		_, err := e.pays.Webhook(context.Background(), body, header)
		if !isCode(err, apperr.BadRequest) || !errors.Is(err, payment.ErrSignature) {
			t.Errorf("%s: %v, want a signature refusal", name, err)
		}
	}
	if got := testutil.ToFloat64(e.m.Refused); got != float64(len(bad)) {
		t.Errorf("refused %v, want %d", got, len(bad))
	}
	if got := e.payment(p.ID); got.Status != store.PaymentRequiresPayment || count(t, e.a, `SELECT count(*) FROM payment_events WHERE payment_id = $1`, p.ID) != 0 {
		t.Fatalf("a refused delivery changed the payment: %+v", got)
	}
	if status, err := e.post(body); err != nil || status != 200 {
		t.Fatalf("well signed: %d %v", status, err)
	}
	if got := e.payment(p.ID); got.Status != store.PaymentSucceeded {
		t.Fatalf("well signed delivery not applied: %+v", got)
	}
	if status, err := e.post([]byte(`{"id": "evt_x"`)); err != nil || status != 400 {
		t.Errorf("garbage: %d %v", status, err)
	}
}

package hold_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/telemetry"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// payEnv is a payment flow on a real app: an on-sale event priced front
// 5000 and back 2500 EUR (seats[0:10] front, seats[10:20] back), buyers,
// and a webhook endpoint over HTTP that does what the web layer's route
// does (Payments.Webhook, 400 for a bad signature, 500 for our errors).
// The provider is the embedded test provider, its intents in the payments
// table, or Stripe's API description served by stripe-mock.
type payEnv struct {
	t      *testing.T
	a      *app.App
	tn     testenv.Tenant
	ev     store.Event
	seats  []uuid.UUID
	secret string
	pays   *hold.Payments
	test   *payment.TestProvider // nil with stripe-mock
	m      *telemetry.Payments
	url    string // the webhook endpoint
	// lose makes the endpoint answer 500 to every delivery, as if the
	// webhooks were lost.
	lose atomic.Bool
}

type payOpts struct {
	stripe     bool   // stripe-mock instead of the test provider
	stripeBase string // another Stripe API base (a closed port)
	ttl        time.Duration
	after      time.Duration // ReconcileAfter
	settle     time.Duration // the delayed card's delay
	app        func(*testing.T) *app.App
}

func newPayEnv(t *testing.T, o payOpts) *payEnv {
	t.Helper()
	var a *app.App
	if o.app != nil {
		a = o.app(t)
	} else {
		a = testenv.App(t, nil)
	}
	tn := testenv.NewTenant(t, a, 3)
	ev := chartEvent(t, a, tn, nil)
	if err := setStatus(t, a, tn, ev.ID, "on_sale"); err != nil {
		t.Fatal(err)
	}
	e := &payEnv{t: t, a: a, tn: tn, ev: ev, seats: testenv.SeatIDs(t, a, tn.Org.ID, ev.ID), secret: payment.NewWebhookSecret()}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/webhooks/stripe"
	var prov payment.Provider
	name := store.ProviderTest
	switch {
	case o.stripe:
		base := o.stripeBase
		if base == "" {
			base = os.Getenv("SEATD_STRIPE_MOCK_URL")
			if base == "" {
				t.Fatal("SEATD_STRIPE_MOCK_URL is not set: run the tests with make test, or eval \"$(scripts/services.sh up test)\"")
			}
		}
		prov, name = payment.NewStripe(payment.StripeConfig{SecretKey: "sk_test_seatd", APIBase: base, Timeout: 5 * time.Second}), store.ProviderStripe
	default:
		tp, err := payment.NewTestProvider(payment.TestProviderConfig{WebhookURL: e.url, WebhookSecret: e.secret,
			Ledger: a.Store.PaymentLedger, SettleAfter: o.settle, Logger: testsvc.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		e.test, prov = tp, tp
		testenv.Run(t, tp)
	}
	e.m = telemetry.NewPayments(prometheus.NewRegistry(), func() (telemetry.PaymentState, bool) { return telemetry.PaymentState{}, false })
	e.pays = hold.NewPayments(a.Engine, prov, payment.NewVerifier(e.secret), hold.PaymentOptions{Provider: name, TTL: o.ttl,
		ReconcileAfter: o.after, ReconcileEvery: time.Hour}, e.m)
	return e
}

// serve is the webhook route.
func (e *payEnv) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, payment.MaxEventBytes))
	if err != nil {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	if e.lose.Load() {
		http.Error(w, "lost", http.StatusInternalServerError)
		return
	}
	_, err = e.pays.Webhook(r.Context(), body, r.Header.Get(payment.SignatureHeader))
	switch {
	case apperr.CodeOf(err) == apperr.BadRequest:
		http.Error(w, "refused", http.StatusBadRequest)
	case err != nil:
		e.t.Logf("webhook: %v", err)
		http.Error(w, "error", http.StatusInternalServerError)
	}
}

func (e *payEnv) buyer(i int) hold.Actor { return buyer(e.tn.Buyers[i]) }

// hold holds seats for buyer i.
func (e *payEnv) hold(i int, seats ...uuid.UUID) []store.Hold {
	e.t.Helper()
	res, err := e.a.Holds.Hold(context.Background(), e.buyer(i), hold.Request{Event: e.ev.ID, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		e.t.Fatalf("hold: %v", err)
	}
	return res.Holds
}

// start starts buyer i's payment under key.
func (e *payEnv) start(i int, key string) hold.Started {
	e.t.Helper()
	st, err := e.pays.Start(context.Background(), e.buyer(i), e.ev.ID, key)
	if err != nil {
		e.t.Fatalf("start payment: %v", err)
	}
	return st
}

// card pays a started payment on the test provider's card page.
func (e *payEnv) card(st hold.Started, number string) (payment.Intent, error) {
	e.t.Helper()
	exp := "12/" + strconv.Itoa((time.Now().Year()+1)%100)
	return e.test.Confirm(context.Background(), st.Payment.IntentID, st.ClientSecret, payment.Card{Number: number, Expiry: exp, CVC: "123"})
}

// payment reads a payment as staff.
func (e *payEnv) payment(id uuid.UUID) store.Payment {
	e.t.Helper()
	p, err := e.pays.Get(context.Background(), staff(e.tn.BoxOffice), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// lapse ends holds as their time passing would: held_until in the past,
// then the reaper.
func (e *payEnv) lapse(holds ...uuid.UUID) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.a.Pool.Exec(ctx, `
		UPDATE seat_holds SET created_at = now() - interval '1 hour', held_until = now() - interval '1 second'
		WHERE org_id = $1 AND id = ANY($2::uuid[])`, e.tn.Org.ID, holds); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.a.Reaper.Reap(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// Stripe's events as Stripe sends them (the fields seatd reads), for a
// payment of this environment.

func intentEvent(id string, typ payment.EventType, p store.Payment, created time.Time, status, declined string) []byte {
	obj := map[string]any{"id": p.IntentID, "object": "payment_intent", "amount": p.AmountMinor,
		"currency": strings.ToLower(p.Currency), "status": status, "created": created.Unix(), "livemode": false,
		"metadata": map[string]string{payment.MetaPayment: p.ID.String(), payment.MetaOrg: p.OrgID.String(),
			payment.MetaEvent: p.EventID.String()}}
	if declined != "" {
		obj["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined", "message": declined}
	}
	return stripeEnvelope(id, typ, created, obj)
}

func refundEvent(id string, typ payment.EventType, p store.Payment, r store.Refund, providerID, status string, created time.Time) []byte {
	obj := map[string]any{"id": providerID, "object": "refund", "amount": r.AmountMinor, "currency": strings.ToLower(r.Currency),
		"payment_intent": p.IntentID, "status": status, "created": created.Unix(),
		"metadata": map[string]string{payment.MetaPayment: p.ID.String(), payment.MetaOrg: p.OrgID.String(),
			payment.MetaRefund: r.ID.String()}}
	if status == "failed" {
		obj["failure_reason"] = "expired_or_canceled_card"
	}
	return stripeEnvelope(id, typ, created, obj)
}

func stripeEnvelope(id string, typ payment.EventType, created time.Time, obj any) []byte {
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created.Unix(),
		"type": typ, "livemode": false, "pending_webhooks": 1, "request": map[string]any{"id": nil, "idempotency_key": nil},
		"data": map[string]any{"object": obj}})
	if err != nil {
		panic(err)
	}
	return b
}

// deliver signs body with the endpoint's secret (stripe-go's test
// helper, timestamp now) and hands it to the webhook path.
func (e *payEnv) deliver(body []byte) (hold.Applied, error) {
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: e.secret})
	return e.pays.Webhook(context.Background(), body, signed.Header)
}

// mustDeliver delivers body and checks its result.
func (e *payEnv) mustDeliver(body []byte, want string) hold.Applied {
	e.t.Helper()
	res, err := e.deliver(body)
	if err != nil {
		e.t.Fatalf("deliver: %v", err)
	}
	if res.Result != want {
		e.t.Fatalf("delivery result %q, want %q", res.Result, want)
	}
	return res
}

// post sends a signed body to the endpoint over HTTP and answers the
// status.
func (e *payEnv) post(body []byte) (int, error) {
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: e.secret})
	req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(string(body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set(payment.SignatureHeader, signed.Header)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_ = res.Body.Close()
	return res.StatusCode, nil
}

// liveTickets counts the live tickets of a seat.
func liveTickets(t *testing.T, a *app.App, seat uuid.UUID) int {
	t.Helper()
	return count(t, a, `SELECT count(*) FROM tickets WHERE seat_id = $1 AND cancelled_at IS NULL`, seat)
}

// isCode reports whether err carries code.
func isCode(err error, code apperr.Code) bool {
	var ae *apperr.Error
	return errors.As(err, &ae) && ae.Code == code
}

package payment_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"seatd/internal/payment"
)

const whsec = "whsec_seatdTestSecret"

// stripeObject is one of stripe-mock's fixtures (Stripe's own example
// objects, every field present) as JSON to patch.
func stripeObject(t *testing.T, path string) map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stripeMockURL(t)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", path, res.Status, b)
	}
	var o map[string]any
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// stripeEvent is a Stripe event of typ around object: stripe-mock's event
// fixture with its type and object replaced.
func stripeEvent(t *testing.T, id, typ string, object map[string]any) []byte {
	t.Helper()
	ev := stripeObject(t, "/v1/events/"+id)
	ev["type"], ev["data"], ev["created"] = typ, map[string]any{"object": object}, time.Now().Unix()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

func TestVerifyIntentEvents(t *testing.T) {
	t.Parallel()
	v := payment.NewVerifier(whsec)
	meta := map[string]any{payment.MetaPayment: "pay-1", payment.MetaOrg: "org-1", payment.MetaEvent: "ev-1"}
	for _, tc := range []struct {
		typ, stripeStatus string
		declined          bool
		want              payment.Status
	}{
		{"payment_intent.succeeded", "succeeded", false, payment.Succeeded},
		{"payment_intent.processing", "processing", false, payment.Processing},
		// A declined attempt's intent reads requires_payment_method again.
		{"payment_intent.payment_failed", "requires_payment_method", true, payment.Failed},
		{"payment_intent.canceled", "canceled", false, payment.Canceled},
	} {
		pi := stripeObject(t, "/v1/payment_intents/pi_seatdEvent")
		pi["amount"], pi["currency"], pi["status"], pi["metadata"] = 4500, "eur", tc.stripeStatus, meta
		pi["last_payment_error"] = nil
		if tc.declined {
			pi["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined", "message": "Your card was declined."}
		}
		body := stripeEvent(t, "evt_seatd1", tc.typ, pi)
		ev, err := v.Verify(body, sign(body, whsec, time.Now()))
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		if ev.ID != "evt_seatd1" || string(ev.Type) != tc.typ || ev.IntentID != "pi_seatdEvent" || ev.PaymentID != "pay-1" ||
			ev.Status != tc.want || ev.AmountMinor != 4500 || ev.Currency != "eur" || time.Since(ev.Created) > time.Minute {
			t.Errorf("%s: %+v", tc.typ, ev)
		}
		if tc.declined != (ev.FailureMessage == "Your card was declined.") {
			t.Errorf("%s: failure message %q", tc.typ, ev.FailureMessage)
		}
	}
}

func TestVerifyRefundEvents(t *testing.T) {
	t.Parallel()
	v := payment.NewVerifier(whsec)

	ch := stripeObject(t, "/v1/charges/ch_seatdRefunded")
	ch["amount"], ch["amount_refunded"], ch["refunded"], ch["payment_intent"] = 4500, 1500, false, "pi_seatdRefunded"
	ch["metadata"] = map[string]any{payment.MetaPayment: "pay-2"}
	body := stripeEvent(t, "evt_seatd2", "charge.refunded", ch)
	ev, err := v.Verify(body, sign(body, whsec, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != payment.EventChargeRefunded || ev.IntentID != "pi_seatdRefunded" || ev.PaymentID != "pay-2" ||
		ev.AmountMinor != 4500 || ev.AmountRefunded != 1500 || ev.Refund == nil || ev.Refund.Status != payment.RefundSucceeded ||
		ev.Refund.IntentID != "pi_seatdRefunded" {
		t.Errorf("charge.refunded: %+v (refund %+v)", ev, ev.Refund)
	}

	for _, typ := range []string{"refund.created", "refund.updated", "refund.failed", "charge.refund.updated"} {
		re := stripeObject(t, "/v1/refunds/re_seatdUpdated")
		re["amount"], re["status"], re["payment_intent"] = 1500, "failed", "pi_seatdRefunded"
		re["metadata"] = map[string]any{payment.MetaPayment: "pay-2"}
		body := stripeEvent(t, "evt_seatd3", typ, re)
		ev, err := v.Verify(body, sign(body, whsec, time.Now()))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if ev.IntentID != "pi_seatdRefunded" || ev.PaymentID != "pay-2" || ev.Refund == nil ||
			*ev.Refund != (payment.Refund{ID: "re_seatdUpdated", IntentID: "pi_seatdRefunded", Status: payment.RefundFailed,
				AmountMinor: 1500, Currency: "usd", PaymentID: "pay-2"}) {
			t.Errorf("%s: %+v (refund %+v)", typ, ev, ev.Refund)
		}
	}
}

// TestVerifyIgnoresOtherTypes: an event seatd does not act on is verified
// and answered with its id and type only, so the route can answer 200 and
// Stripe stops sending it.
func TestVerifyIgnoresOtherTypes(t *testing.T) {
	t.Parallel()
	body := stripeEvent(t, "evt_seatd4", "customer.created", stripeObject(t, "/v1/customers/cus_x"))
	ev, err := payment.NewVerifier(whsec).Verify(body, sign(body, whsec, time.Now()))
	if err != nil || ev.ID != "evt_seatd4" || ev.Type != "customer.created" || ev.IntentID != "" {
		t.Errorf("%+v %v", ev, err)
	}
}

// TestVerifyRefusesBadSignatures: a missing, malformed, wrong or stale
// signature, or a body changed after signing, is refused as bad_request
// (the route answers 400 and changes nothing).
func TestVerifyRefusesBadSignatures(t *testing.T) {
	t.Parallel()
	pi := stripeObject(t, "/v1/payment_intents/pi_seatdForged")
	pi["status"] = "succeeded"
	body := stripeEvent(t, "evt_seatd5", "payment_intent.succeeded", pi)
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-2] = ' ' // still JSON, not what was signed
	v := payment.NewVerifier(whsec)
	for _, tc := range []struct {
		name   string
		body   []byte
		header string
	}{
		{"missing header", body, ""},
		{"malformed header", body, "v1=zz,t=yesterday"},
		{"wrong secret", body, sign(body, "whsec_someoneElse", time.Now())},
		{"tampered body", tampered, sign(body, whsec, time.Now())},
		{"stale timestamp", body, sign(body, whsec, time.Now().Add(-webhook.DefaultTolerance-10*time.Second))},
	} {
		if _, err := v.Verify(tc.body, tc.header); !isSignature(err) {
			t.Errorf("%s: %v, want a signature refusal (bad_request)", tc.name, err)
		}
	}
	// Just inside the tolerance is accepted.
	if _, err := v.Verify(body, sign(body, whsec, time.Now().Add(-webhook.DefaultTolerance+30*time.Second))); err != nil {
		t.Errorf("a 4.5-minute-old signature: %v", err)
	}
}

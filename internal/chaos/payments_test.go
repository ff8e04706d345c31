package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatd/internal/payment"
	"seatd/internal/testsvc"
)

// chaosWebhookSecret signs the provider's events in TestPaymentWebhookProcessKilled.
const chaosWebhookSecret = "whsec_chaos_payments"

// TestPaymentWebhookProcessKilled: buyers pay for their holds; the
// provider's payment_intent.succeeded events reach one process whose
// Postgres answers slowly, and that process is killed with SIGKILL while
// it applies them. The provider then sends every event again, twice and
// at once, to the other process, as Stripe retries a delivery it got no
// 2xx for. Afterwards every payment is succeeded with exactly one booking,
// every paid seat is sold once with one live ticket, and nothing was sold
// that nobody paid for.
func TestPaymentWebhookProcessKilled(t *testing.T) {
	c := newCluster(t, clusterOptions{nodes: 2, sections: 1, rows: 2, perRow: 20,
		env: map[string]string{
			// Payments are required, through the built-in test provider
			// (no Stripe key); its events are signed with this secret.
			"SEATD_PAYMENTS":        "required",
			"STRIPE_WEBHOOK_SECRET": chaosWebhookSecret,
		}})
	p1, p2 := c.nodes[0], c.nodes[1]
	const buyers, perBuyer = 12, 2
	cls := c.buyers(t, buyers)
	ctx := context.Background()

	type paid struct {
		id, intent    string
		amount        int64
		currency, evt string
		seats         []uuid.UUID
	}
	pays := make([]paid, buyers)
	for i, cl := range cls {
		for _, seat := range c.seats[i*perBuyer : (i+1)*perBuyer] {
			c.mustHold(t, cl, p2, seat)
			pays[i].seats = append(pays[i].seats, seat)
		}
		status, body, err := cl.call(ctx, p2, http.MethodPost, "/api/v1/events/"+c.event.ID.String()+"/payments",
			nil, http.Header{"Idempotency-Key": {fmt.Sprintf("chaos-pay-%d", i)}})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("start payment %d: %d %v %s", i, status, err, body)
		}
		var p struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		pays[i].id, pays[i].evt = p.ID, fmt.Sprintf("evt_chaos_%d", i)
		if err := c.admin.Pool.QueryRow(ctx, `SELECT intent_id, amount_minor, currency FROM payments WHERE id = $1`, p.ID).
			Scan(&pays[i].intent, &pays[i].amount, &pays[i].currency); err != nil {
			t.Fatalf("payment %d in postgres: %v", i, err)
		}
	}
	events := make([][]byte, buyers)
	for i, p := range pays {
		events[i] = succeededEvent(t, p.evt, p.id, p.intent, c.tenant.Org.ID.String(), c.event.ID.String(), p.amount, p.currency)
	}

	// p1's Postgres answers 300 ms late: the deliveries are mid-way when
	// the process dies.
	heal := c.toxic(t, true, "latency", "downstream", map[string]any{"latency": 300}, p1)
	var wg sync.WaitGroup
	firstTry := make([]int, buyers)
	for i := range events {
		wg.Go(func() { firstTry[i] = deliverWebhook(p1, events[i]) })
	}
	// The kill comes once the first payment is applied: some deliveries
	// are done, the others in flight.
	ids := make([]string, buyers)
	for i, p := range pays {
		ids[i] = p.id
	}
	var done int
	if !testsvc.Poll(30*time.Second, func() bool {
		err := c.admin.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE id = ANY($1::uuid[]) AND status = 'succeeded'`, ids).Scan(&done)
		return err == nil && done > 0
	}) {
		t.Fatalf("no delivery to %s was applied within 30 s", p1.name)
	}
	p1.kill()
	wg.Wait()
	heal()
	answered := 0
	for _, s := range firstTry {
		if s == http.StatusOK {
			answered++
		}
	}
	t.Logf("deliveries to the killed process: %d of %d applied when it was killed, %d answered 200", done, buyers, answered)

	// The provider's retries: every event, twice at once, to p2.
	retry := make([]int, 2*buyers)
	for i := range retry {
		wg.Go(func() { retry[i] = deliverWebhook(p2, events[i%buyers]) })
	}
	wg.Wait()
	for i, s := range retry {
		if s != http.StatusOK {
			t.Errorf("retried delivery of %s to %s: HTTP %d, want 200", pays[i%buyers].evt, p2.name, s)
		}
	}

	for i, p := range pays {
		var status string
		var booked []uuid.UUID
		var recorded int
		if err := c.admin.Pool.QueryRow(ctx, `
			SELECT p.status,
			       coalesce((SELECT array_agg(k.seat_id ORDER BY k.seat_id) FROM tickets k
			                 WHERE k.booking_id = p.booking_id AND k.cancelled_at IS NULL), '{}'),
			       (SELECT count(*) FROM payment_events e WHERE e.payment_id = p.id AND e.event_id = $2 AND e.result = 'applied')
			FROM payments p WHERE p.id = $1`, p.id, p.evt).Scan(&status, &booked, &recorded); err != nil {
			t.Fatal(err)
		}
		want := slices.SortedFunc(slices.Values(p.seats), func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
		if status != "succeeded" || !slices.Equal(booked, want) || recorded != 1 {
			t.Errorf("payment %d: %s, its booking's live tickets %v, its event recorded as applied: %d; want succeeded, %v, 1",
				i, status, booked, recorded, want)
		}
	}
	// Nothing else was sold: one booking a payment, and no ticket outside them.
	var bookings, tickets int
	if err := c.admin.Pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM bookings WHERE event_id = $1),
		       (SELECT count(*) FROM tickets WHERE event_id = $1 AND cancelled_at IS NULL)`, c.event.ID).Scan(&bookings, &tickets); err != nil {
		t.Fatal(err)
	}
	if bookings != buyers || tickets != buyers*perBuyer {
		t.Errorf("event: %d bookings with %d live tickets, want %d with %d", bookings, tickets, buyers, buyers*perBuyer)
	}
}

// succeededEvent is Stripe's payment_intent.succeeded for a payment, with
// the fields seatd reads.
func succeededEvent(t *testing.T, id, paymentID, intent, org, event string, amount int64, currency string) []byte {
	t.Helper()
	now := time.Now().Unix()
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion, "created": now,
		"type": payment.EventType("payment_intent.succeeded"), "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data": map[string]any{"object": map[string]any{"id": intent, "object": "payment_intent", "amount": amount,
			"currency": strings.ToLower(currency), "status": "succeeded", "created": now, "livemode": false,
			"metadata": map[string]string{payment.MetaPayment: paymentID, payment.MetaOrg: org, payment.MetaEvent: event}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deliverWebhook posts a signed provider event to n's webhook endpoint
// and answers the status (0 when the process did not answer).
func deliverWebhook(n *node, body []byte) int {
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: chaosWebhookSecret})
	req, err := http.NewRequest(http.MethodPost, n.url("/webhooks/stripe"), bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set(payment.SignatureHeader, signed.Header)
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	_ = res.Body.Close()
	return res.StatusCode
}

package web

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// paySecret signs the test provider's events in these tests (and the
// ones the tests sign themselves).
const paySecret = "whsec_paytestsecret0123456789"

// payServer is a server on which buyers pay (SEATD_PAYMENTS=required)
// with the embedded test provider, served on the address the app names
// as its own: the provider's signed events reach the server's own
// POST /webhooks/stripe over HTTP, as in production.
// With background, the app's background loops run too (browser tests).
func payServer(t testing.TB, mod func(*config.Config)) *testServer {
	return payServerWith(t, mod, false)
}

func payServerWith(t testing.TB, mod func(*config.Config), background bool) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := testenv.App(t, func(c *config.Config) {
		c.PGMaxConns = 8
		generousLimits(c)
		c.Addr = ln.Addr().String()
		c.Payments = config.PaymentsRequired
		c.StripeWebhookSecret = paySecret
		if mod != nil {
			mod(c)
		}
	})
	if a.TestPayments == nil {
		t.Fatal("no test provider")
	}
	if background {
		testenv.Background(t, a) // with the test provider's deliveries
	} else {
		testenv.Run(t, a.TestPayments) // the delayed card's success, retries
	}
	d := depsOf(a)
	d.Notifier = testenv.Notifier(t, a)
	s := newServer(d, options{})
	testenv.Run(t, s)
	ts := httptest.NewUnstartedServer(s)
	_ = ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return &testServer{t: t, app: a, srv: s, ts: ts}
}

// paidEvent is an on-sale event priced front 50.00 and back 25.00 EUR,
// and its seats by row and number ("B3").
func paidEvent(t testing.TB, a *app.App, tn testenv.Tenant) (uuid.UUID, map[string]uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	v := testenv.NewChart(t, a, tn.Org.ID, 3, 8)
	str := func(s string) *string { return &s }
	now := time.Now()
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	e, err := a.Events.Create(ctx, org, hold.EventInput{Name: str("Paid Night"), Venue: str("Hall"),
		StartsAt: str(now.Add(48 * time.Hour).UTC().Format(time.RFC3339)), TimeZone: str("UTC"), ChartID: str(v.ChartID.String()),
		OnSaleAt: str(now.Add(-time.Hour).UTC().Format(time.RFC3339)), SalesEndAt: str(now.Add(24 * time.Hour).UTC().Format(time.RFC3339)),
		Prices: []store.Price{{Category: "front", PriceMinor: 5000, Currency: "EUR"}, {Category: "back", PriceMinor: 2500, Currency: "EUR"}}})
	if err != nil {
		e, _ := apperr.As(err)
		t.Fatalf("create event: %v %v", err, e)
	}
	if _, err := a.Events.Update(ctx, org, e.ID, hold.EventInput{Status: str("on_sale")}); err != nil {
		t.Fatal(err)
	}
	all, err := a.Store.Events.Seats(ctx, tn.Org.ID, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	seats := map[string]uuid.UUID{}
	for _, st := range all {
		seats[st.Row+strconv.Itoa(st.Number)] = st.ID
	}
	return e.ID, seats
}

// paymentOf is a payment answer.
type paymentOf struct {
	ID           uuid.UUID   `json:"id"`
	Status       string      `json:"status"`
	AmountMinor  int64       `json:"amount_minor"`
	Currency     string      `json:"currency"`
	HoldIDs      []uuid.UUID `json:"hold_ids"`
	ClientSecret string      `json:"client_secret"`
	RedirectURL  string      `json:"redirect_url"`
	ExpiresAt    time.Time   `json:"expires_at"`
	BookingID    uuid.UUID   `json:"booking_id"`
	Failure      string      `json:"failure_message"`
}

// bookingPaid is the payment part of a booking answer.
type bookingPaid struct {
	ID        uuid.UUID `json:"id"`
	Status    string    `json:"status"`
	PaymentID uuid.UUID `json:"payment_id"`
	PaidMinor *int64    `json:"paid_minor"`
	Refund    *struct {
		Status      string `json:"status"`
		AmountMinor int64  `json:"amount_minor"`
	} `json:"refund"`
	Tickets []struct {
		ID uuid.UUID `json:"id"`
	} `json:"tickets"`
}

func startPayment(t testing.TB, c *client, event uuid.UUID, key string) (paymentOf, response) {
	t.Helper()
	r := c.do("POST", "/api/v1/events/"+event.String()+"/payments", nil, "Idempotency-Key", key)
	var p paymentOf
	if r.status/100 == 2 {
		r.json(t, &p)
	}
	return p, r
}

// payCard posts the test provider's card form of a payment, with the
// secret its page carries.
func payCard(t testing.TB, c *client, pay uuid.UUID, number string) response {
	t.Helper()
	page := c.do("GET", "/payments/"+pay.String(), nil).want(t, http.StatusOK).doc(t)
	secret, _ := page.Find(`input[name=client_secret]`).Attr("value")
	intent, _ := page.Find(`input[name=intent]`).Attr("value")
	action, _ := page.Find(`form[data-testid=card-form]`).Attr("action")
	if secret == "" || action == "" {
		t.Fatalf("card page without its form: %s", page.Text())
	}
	form := url.Values{"intent": {intent}, "client_secret": {secret}, "number": {number},
		"expiry": {"12/" + strconv.Itoa((time.Now().Year()+2)%100)}, "cvc": {"123"}, "name": {"Ada Lovelace"}}
	return c.do("POST", action, raw{"application/x-www-form-urlencoded", []byte(form.Encode())})
}

// TestPaymentOverHTTP: a buyer's priced purchase is refused with
// payment_required; the buyer starts a payment (the same key answers the
// same payment), pays on the test provider's card page, whose success
// reaches POST /webhooks/stripe signed, and the waiting page sends the
// buyer to the booking the webhook made.
func TestPaymentOverHTTP(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 2)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	hs := coreHold(t, s.app, tn.Buyers[0], event, seats["A5"], seats["B5"])

	e := buyer.do("POST", "/api/v1/events/"+event.String()+"/purchase",
		map[string]any{"hold_ids": []uuid.UUID{hs[0].ID, hs[1].ID}}, "Idempotency-Key", "direct").
		wantErr(t, http.StatusConflict, "payment_required")
	if !strings.Contains(e.Message, "/payments") {
		t.Errorf("payment_required does not point to the payments route: %q", e.Message)
	}

	p, r := startPayment(t, buyer, event, "pay-1")
	r.want(t, http.StatusCreated)
	if p.Status != "requires_payment" || p.AmountMinor != 7500 || p.Currency != "EUR" || len(p.HoldIDs) != 2 {
		t.Fatalf("payment %+v", p)
	}
	if p.RedirectURL != "/payments/"+p.ID.String() || p.ClientSecret != "" {
		t.Errorf("redirect_url %q, client_secret %q: the test provider's card page, no secret", p.RedirectURL, p.ClientSecret)
	}
	if time.Until(p.ExpiresAt) < 10*time.Minute {
		t.Errorf("expires_at %v", p.ExpiresAt)
	}
	again, r := startPayment(t, buyer, event, "pay-1")
	r.want(t, http.StatusOK)
	if again.ID != p.ID {
		t.Fatalf("replay made payment %s, want %s", again.ID, p.ID)
	}
	// The holds show as paying in the cart, without a Release.
	cart := buyer.do("GET", "/e/"+event.String()+"/cart", nil).want(t, 200).doc(t)
	if n := cart.Find(`[data-testid=cart-paying-seat]`).Length(); n != 2 {
		t.Errorf("%d seats paying in the cart, want 2", n)
	}
	if cart.Find(`button[aria-label^=Release]`).Length() != 0 {
		t.Error("a seat being paid for can be released from the cart")
	}

	// The card page says no money moves; the good card pays.
	page := buyer.do("GET", "/payments/"+p.ID.String(), nil).want(t, 200)
	if !strings.Contains(string(page.body), "no money moves") {
		t.Error("the card page does not say no money moves")
	}
	res := payCard(t, buyer, p.ID, "4242 4242 4242 4242").want(t, http.StatusSeeOther)
	wait := res.header.Get("Location")
	if wait != "/payments/"+p.ID.String()+"/processing" {
		t.Fatalf("after paying: %q", wait)
	}
	var booking string
	testsvc.Eventually(t, 10*time.Second, "the webhook's booking", func() bool {
		r := buyer.do("GET", wait, nil)
		booking = r.header.Get("Location")
		return r.status == http.StatusSeeOther && strings.HasPrefix(booking, "/bookings/")
	})
	buyer.do("GET", booking, nil).want(t, http.StatusOK)
	var got paymentOf
	buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
	if got.Status != "succeeded" || "/bookings/"+got.BookingID.String() != booking {
		t.Errorf("payment after the webhook %+v", got)
	}
	var b bookingPaid
	buyer.do("GET", "/api/v1/bookings/"+got.BookingID.String(), nil).want(t, 200).json(t, &b)
	if b.PaymentID != p.ID || b.PaidMinor == nil || *b.PaidMinor != 7500 || b.Refund != nil {
		t.Errorf("booking %+v", b)
	}

	// Another buyer, and another organization's staff, do not find it.
	other := s.as(tn.Org, tn.Buyers[1])
	other.do("GET", "/api/v1/payments/"+p.ID.String(), nil).wantErr(t, 404, "not_found")
	other.do("GET", "/payments/"+p.ID.String(), nil).want(t, 404)
	tn2 := testenv.NewTenant(t, s.app, 0)
	s.as(tn2.Org, tn2.BoxOffice).do("GET", "/api/v1/payments/"+p.ID.String(), nil).wantErr(t, 404, "not_found")
	// Staff of the organization read it.
	s.as(tn.Org, tn.BoxOffice).do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200)
	var list struct {
		Payments []paymentOf `json:"payments"`
	}
	s.as(tn.Org, tn.BoxOffice).do("GET", "/api/v1/events/"+event.String()+"/payments", nil).want(t, 200).json(t, &list)
	if len(list.Payments) != 1 || list.Payments[0].ID != p.ID {
		t.Errorf("event's payments %+v", list.Payments)
	}
}

// TestPaymentDeclinedOverHTTP: a declined card sends the buyer back to
// the seat map with the reason; the holds stay theirs, and another card
// pays the same payment.
func TestPaymentDeclinedOverHTTP(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["B2"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)

	res := payCard(t, buyer, p.ID, "4000 0000 0000 0002").want(t, http.StatusSeeOther)
	if loc := res.header.Get("Location"); loc != "/e/"+event.String() {
		t.Fatalf("after a decline: %q, want the seat map", loc)
	}
	mapPage := buyer.do("GET", "/e/"+event.String(), nil).want(t, 200)
	if !strings.Contains(string(mapPage.body), "declined") {
		t.Error("the seat map does not say the card was declined")
	}
	var got paymentOf
	buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
	if got.Status != "failed" || got.Failure == "" {
		t.Errorf("payment after a decline %+v", got)
	}
	mine, err := s.app.Holds.Mine(t.Context(), actor(tn.Buyers[0]), event)
	if err != nil || len(mine) != 1 || mine[0].PaymentID != p.ID {
		t.Fatalf("holds after a decline %+v (%v)", mine, err)
	}
	// Wrong card details show the form again, and change nothing.
	page := buyer.do("GET", "/payments/"+p.ID.String(), nil).want(t, 200).doc(t)
	secret, _ := page.Find(`input[name=client_secret]`).Attr("value")
	bad := url.Values{"client_secret": {secret}, "number": {"1234"}, "expiry": {"01/01"}, "cvc": {"1"}}
	buyer.do("POST", "/payments/"+p.ID.String()+"/card", raw{"application/x-www-form-urlencoded", []byte(bad.Encode())}).
		want(t, http.StatusUnprocessableEntity)

	payCard(t, buyer, p.ID, "4242424242424242").want(t, http.StatusSeeOther)
	testsvc.Eventually(t, 10*time.Second, "the booking", func() bool {
		buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
		return got.BookingID != uuid.Nil
	})
}

// TestPaymentWebhookRoute: the endpoint refuses a missing, wrong or
// stale signature with 400 and changes nothing; a signed success books
// once, and its copy is a duplicate; a body over the cap is 413.
func TestPaymentWebhookRoute(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["B3"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	pay, err := s.app.Payments.Get(t.Context(), actor(tn.BoxOffice), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	body := succeededEvent("evt_http_1", pay)
	hook := s.client()
	before := orgState(t, s.app, tn.Org.ID)
	for name, sig := range map[string]string{
		"missing": "",
		"wrong":   webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_another"}).Header,
		"stale": webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: paySecret,
			Timestamp: time.Now().Add(-time.Hour)}).Header,
		"garbled": "t=,v1=zz",
	} {
		var hdr []string
		if sig != "" {
			hdr = []string{payment.SignatureHeader, sig}
		}
		r := hook.do("POST", "/webhooks/stripe", raw{"application/json", body}, hdr...)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s signature: %d %s, want 400", name, r.status, r.body)
		} else {
			r.errBody(t)
		}
	}
	if after := orgState(t, s.app, tn.Org.ID); after != before {
		t.Error("a refused webhook changed the seats, holds or bookings")
	}
	hook.do("POST", "/webhooks/stripe", raw{"application/json", make([]byte, payment.MaxEventBytes+1)},
		payment.SignatureHeader, "t=1,v1=00").want(t, http.StatusRequestEntityTooLarge)

	signed := func() string {
		return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: paySecret}).Header
	}
	var res struct {
		Result string `json:"result"`
	}
	hook.do("POST", "/webhooks/stripe", raw{"application/json", body}, payment.SignatureHeader, signed()).want(t, 200).json(t, &res)
	if res.Result != "applied" {
		t.Errorf("first delivery %q", res.Result)
	}
	hook.do("POST", "/webhooks/stripe", raw{"application/json", body}, payment.SignatureHeader, signed()).want(t, 200).json(t, &res)
	if res.Result != "duplicate" {
		t.Errorf("second delivery %q", res.Result)
	}
	if n := orgRows(t, s.app, "bookings", tn.Org.ID); n != 1 {
		t.Errorf("%d bookings, want 1", n)
	}
}

// TestWebhookOutsidePageMiddleware: the provider's webhook is checked by
// its signature alone. A delivery that comes with a browser's trappings —
// a session cookie, a cross-site Origin — is applied all the same, and
// neither loads, touches nor writes a session: no cookie set, no Vary on
// Cookie, no session row made.
func TestWebhookOutsidePageMiddleware(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["B4"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	pay, err := s.app.Payments.Get(t.Context(), actor(tn.BoxOffice), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	sessions := func() (n int) {
		t.Helper()
		if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM sessions`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := sessions()
	body := succeededEvent("evt_bare_1", pay)
	sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: paySecret}).Header
	checks := func(name string, r response) {
		t.Helper()
		if c := r.header.Values("Set-Cookie"); len(c) != 0 {
			t.Errorf("%s: the webhook set cookies %q", name, c)
		}
		for _, v := range r.header.Values("Vary") {
			if strings.Contains(v, "Cookie") {
				t.Errorf("%s: the webhook went through the session middleware (Vary: %s)", name, v)
			}
		}
	}
	res := buyer.do("POST", "/webhooks/stripe", raw{"application/json", body}, payment.SignatureHeader, sig,
		"Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site")
	checks("with a cookie, cross-site", res.want(t, http.StatusOK))
	var out struct {
		Result string `json:"result"`
	}
	res.json(t, &out)
	if out.Result != "applied" {
		t.Errorf("delivery %q, want applied", out.Result)
	}
	checks("no cookie, bad signature", s.client().do("POST", "/webhooks/stripe", raw{"application/json", body},
		payment.SignatureHeader, "t=1,v1=00").want(t, http.StatusBadRequest))
	if after := sessions(); after != before {
		t.Errorf("%d sessions after the webhooks, %d before", after, before)
	}
}

// succeededEvent is Stripe's payment_intent.succeeded for a payment.
func succeededEvent(id string, p store.Payment) []byte {
	now := time.Now()
	obj := map[string]any{"id": p.IntentID, "object": "payment_intent", "amount": p.AmountMinor,
		"currency": strings.ToLower(p.Currency), "status": "succeeded", "created": now.Unix(), "livemode": false,
		"metadata": map[string]string{payment.MetaPayment: p.ID.String(), payment.MetaOrg: p.OrgID.String(),
			payment.MetaEvent: p.EventID.String()}}
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion, "created": now.Unix(),
		"type": payment.EventIntentSucceeded, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "data": map[string]any{"object": obj}})
	if err != nil {
		panic(err)
	}
	return b
}

// TestPaymentInputErrors: the payment routes answer malformed input
// with clear JSON errors, and only buyers start payments.
func TestPaymentInputErrors(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, _ := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	path := "/api/v1/events/" + event.String() + "/payments"
	buyer.do("POST", path, nil).wantErr(t, http.StatusUnprocessableEntity, "invalid") // no Idempotency-Key
	buyer.do("POST", "/api/v1/events/not-an-id/payments", nil, "Idempotency-Key", "k").wantErr(t, http.StatusNotFound, "not_found")
	buyer.do("POST", path, raw{"application/json", []byte(`{"x":`)}, "Idempotency-Key", "k").wantErr(t, http.StatusBadRequest, "bad_request")
	buyer.do("POST", path, raw{"application/json", []byte(`{"hold_ids":[]}`)}, "Idempotency-Key", "k").wantErr(t, http.StatusUnprocessableEntity, "invalid")
	// Nothing held: nothing to pay.
	if r := buyer.do("POST", path, nil, "Idempotency-Key", "k"); r.status/100 == 2 {
		t.Errorf("a payment of no holds: %d %s", r.status, r.body)
	} else {
		r.errBody(t)
	}
	buyer.do("GET", "/api/v1/payments/"+uuid.NewString(), nil).wantErr(t, http.StatusNotFound, "not_found")
	buyer.do("GET", "/api/v1/payments/x", nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.BoxOffice).do("POST", path, nil, "Idempotency-Key", "k").wantErr(t, http.StatusForbidden, "forbidden")
	s.as(tn.Org, tn.BoxOffice).do("GET", "/api/v1/events/"+event.String()+"/payments?status=nope", nil).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
	s.client().do("POST", path, nil, "Idempotency-Key", "k").wantErr(t, http.StatusUnauthorized, "unauthorized")
}

// TestPaymentRequiredSetting: with SEATD_PAYMENTS=required a buyer's
// purchase of priced seats is 409 payment_required and changes nothing,
// seats without a price still book directly, and staff sales are
// unchanged; with off, the buyer's purchase books.
func TestPaymentRequiredSetting(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	purchase := func(c *client, key string, hs ...store.Hold) response {
		ids := make([]uuid.UUID, len(hs))
		for i, h := range hs {
			ids[i] = h.ID
		}
		return c.do("POST", "/api/v1/events/"+event.String()+"/purchase", map[string]any{"hold_ids": ids}, "Idempotency-Key", key)
	}
	hs := coreHold(t, s.app, tn.Buyers[0], event, seats["B1"])
	before := orgState(t, s.app, tn.Org.ID)
	purchase(buyer, "k1", hs...).wantErr(t, http.StatusConflict, "payment_required")
	if orgState(t, s.app, tn.Org.ID) != before {
		t.Error("a refused purchase changed something")
	}
	// Staff sales do not go through payments.
	sale(t, s.app, tn.BoxOffice, event, seats["C1"])

	// Free seats book directly.
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := s.app.Events.Update(t.Context(), org, event, hold.EventInput{Prices: []store.Price{
		{Category: "front", PriceMinor: 0, Currency: "EUR"}, {Category: "back", PriceMinor: 2500, Currency: "EUR"}}}); err != nil {
		t.Fatal(err)
	}
	free := coreHold(t, s.app, tn.Buyers[0], event, seats["A6"])
	purchase(buyer, "k2", free...).want(t, http.StatusCreated)

	off := newTestServer(t, nil) // the test environment's SEATD_PAYMENTS=off
	tn2 := testenv.NewTenant(t, off.app, 1)
	event2, seats2 := paidEvent(t, off.app, tn2)
	hs2 := coreHold(t, off.app, tn2.Buyers[0], event2, seats2["B1"])
	off.as(tn2.Org, tn2.Buyers[0]).do("POST", "/api/v1/events/"+event2.String()+"/purchase",
		map[string]any{"hold_ids": []uuid.UUID{hs2[0].ID}}, "Idempotency-Key", "k").want(t, http.StatusCreated)
}

// TestPaidBookingCancelRefunds: staff cancelling a paid booking (API and
// box-office page) refunds the cancelled tickets through the provider;
// the booking answers its payment, what it took and its refund.
func TestPaidBookingCancelRefunds(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["A3"], seats["B3"], seats["B4"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	payCard(t, buyer, p.ID, "4242424242424242").want(t, http.StatusSeeOther)
	var got paymentOf
	testsvc.Eventually(t, 10*time.Second, "the booking", func() bool {
		buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
		return got.BookingID != uuid.Nil
	})
	box := s.as(tn.Org, tn.BoxOffice)
	var b bookingPaid
	box.do("GET", "/api/v1/bookings/"+got.BookingID.String(), nil).want(t, 200).json(t, &b)
	if b.PaidMinor == nil || *b.PaidMinor != 10000 {
		t.Fatalf("paid_minor %v", b.PaidMinor)
	}
	// One ticket through the API.
	box.do("POST", "/api/v1/bookings/"+b.ID.String()+"/cancel",
		map[string]any{"ticket_ids": []uuid.UUID{b.Tickets[0].ID}, "reason": "asked"}).want(t, 200).json(t, &b)
	if b.Status != "partially_cancelled" || b.Refund == nil || b.Refund.AmountMinor == 0 {
		t.Fatalf("after cancelling one ticket %+v", b)
	}
	first := b.Refund.AmountMinor
	// The rest through the box-office page.
	form := url.Values{"reason": {"show moved"}}
	box.do("POST", "/box-office/bookings/"+b.ID.String()+"/cancel", raw{"application/x-www-form-urlencoded", []byte(form.Encode())})
	testsvc.Eventually(t, 10*time.Second, "the whole refund", func() bool {
		box.do("GET", "/api/v1/bookings/"+b.ID.String(), nil).want(t, 200).json(t, &b)
		return b.Status == "cancelled" && b.Refund != nil && b.Refund.AmountMinor == 10000 && b.Refund.Status == "succeeded"
	})
	if first >= 10000 {
		t.Errorf("first refund %d", first)
	}
	buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
	if got.Status != "refunded" {
		t.Errorf("payment after refunds: %s", got.Status)
	}
	var failed struct {
		Refunds []json.RawMessage `json:"refunds"`
	}
	box.do("GET", "/api/v1/refunds/failed", nil).want(t, 200).json(t, &failed)
	if len(failed.Refunds) != 0 {
		t.Errorf("failed refunds %s", failed.Refunds)
	}
	box.do("POST", "/api/v1/refunds/"+uuid.NewString()+"/retry", nil).wantErr(t, 404, "not_found")
	buyer.do("GET", "/api/v1/refunds/failed", nil).wantErr(t, 403, "forbidden")

	// The organizer's figures and export.
	org := s.as(tn.Org, tn.Organizer)
	var sum struct {
		Categories []struct {
			Category      string `json:"category"`
			PaidMinor     int64  `json:"paid_minor"`
			RefundedMinor int64  `json:"refunded_minor"`
		} `json:"categories"`
	}
	org.do("GET", "/api/v1/events/"+event.String()+"/payments/summary", nil).want(t, 200).json(t, &sum)
	var paid, refunded int64
	for _, c := range sum.Categories {
		paid, refunded = paid+c.PaidMinor, refunded+c.RefundedMinor
	}
	if paid != 10000 || refunded != 10000 {
		t.Errorf("summary %+v", sum)
	}
	csv := org.do("GET", "/api/v1/events/"+event.String()+"/exports/payments.csv", nil).want(t, 200)
	if ct := csv.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") || !strings.Contains(string(csv.body), p.ID.String()) {
		t.Errorf("payments.csv %s: %s", ct, csv.body)
	}
	box.do("GET", "/api/v1/events/"+event.String()+"/exports/payments.csv", nil).wantErr(t, 403, "forbidden")
	tn2 := testenv.NewTenant(t, s.app, 0)
	s.as(tn2.Org, tn2.Organizer).do("GET", "/api/v1/events/"+event.String()+"/exports/payments.csv", nil).wantErr(t, 404, "not_found")
}

// refundFailedEvent is Stripe's refund.failed for a refund of a payment.
func refundFailedEvent(id string, p store.Payment, r store.Refund) []byte {
	return refundEvent(id, payment.EventRefundFailed, "failed", p, r)
}

// refundEvent is Stripe's event typ about a refund of a payment, whose
// status the event reports.
func refundEvent(id string, typ payment.EventType, status string, p store.Payment, r store.Refund) []byte {
	now := time.Now()
	obj := map[string]any{"id": r.ProviderRefundID, "object": "refund", "amount": r.AmountMinor, "currency": strings.ToLower(r.Currency),
		"payment_intent": p.IntentID, "status": status, "created": now.Unix(),
		"metadata": map[string]string{payment.MetaPayment: p.ID.String(), payment.MetaOrg: p.OrgID.String(),
			payment.MetaRefund: r.ID.String()}}
	if status == "failed" {
		obj["failure_reason"] = "expired_or_canceled_card"
	}
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion, "created": now.Unix(),
		"type": typ, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "data": map[string]any{"object": obj}})
	if err != nil {
		panic(err)
	}
	return b
}

// TestRefundMail: staff cancel one ticket of a booking paid online; once
// its refund succeeds the buyer gets one mail (through the outbox, read
// back from Mailpit) saying how much came back, in which currency, for
// which ticket, and what is still valid, in a text and an HTML part. The
// provider's webhooks reporting the same success again mail nothing more.
func TestRefundMail(t *testing.T) {
	s := payServerWith(t, ownQueues(t), true)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["C5"], seats["C6"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	payCard(t, buyer, p.ID, "4242424242424242").want(t, http.StatusSeeOther)
	var got paymentOf
	testsvc.Eventually(t, 10*time.Second, "the booking", func() bool {
		buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
		return got.BookingID != uuid.Nil
	})
	var b bookingPaid
	buyer.do("GET", "/api/v1/bookings/"+got.BookingID.String(), nil).want(t, 200).json(t, &b)
	if len(b.Tickets) != 2 {
		t.Fatalf("booking %+v", b)
	}
	box := s.as(tn.Org, tn.BoxOffice)
	box.do("POST", "/api/v1/bookings/"+b.ID.String()+"/cancel", map[string]any{"reason": "row closed",
		"ticket_ids": []uuid.UUID{b.Tickets[0].ID}}).want(t, 200)

	subject := "Refund of 25.00 EUR"
	refundMails := func() []testsvc.MailSummary {
		var out []testsvc.MailSummary
		for _, m := range mp.To(tn.Buyers[0].Email) {
			if strings.HasPrefix(m.Subject, subject) {
				out = append(out, m)
			}
		}
		return out
	}
	testsvc.Eventually(t, 30*time.Second, "the refund mail", func() bool { return len(refundMails()) > 0 })
	msg := mp.Message(refundMails()[0].ID)
	for _, part := range []struct{ name, body string }{{"text", msg.Text}, {"html", msg.HTML}} {
		for _, want := range []string{"25.00 EUR", "refunded", "1 of your tickets are still valid"} {
			if !strings.Contains(part.body, want) {
				t.Errorf("the refund mail's %s part lacks %q:\n%s", part.name, want, part.body)
			}
		}
	}
	if !strings.Contains(msg.Text, "Row C") && !strings.Contains(msg.Text, "C-5") && !strings.Contains(msg.Text, "Seat 5") {
		t.Errorf("the refund mail does not name the ticket refunded:\n%s", msg.Text)
	}

	// The same success reported again, by both of Stripe's refund events.
	pay, err := s.app.Payments.Get(t.Context(), actor(tn.BoxOffice), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ref store.Refund
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT id, provider_refund_id, amount_minor, currency FROM refunds
		WHERE org_id = $1 AND booking_id = $2`, tn.Org.ID, b.ID).Scan(&ref.ID, &ref.ProviderRefundID, &ref.AmountMinor, &ref.Currency); err != nil {
		t.Fatal(err)
	}
	hook := s.client()
	for i, typ := range []payment.EventType{payment.EventRefundUpdated, payment.EventChargeRefundUpdated, payment.EventRefundUpdated} {
		body := refundEvent("evt_refund_again_"+strconv.Itoa(i), typ, "succeeded", pay, ref)
		sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: paySecret}).Header
		hook.do("POST", "/webhooks/stripe", raw{"application/json", body}, payment.SignatureHeader, sig).want(t, 200)
	}
	// Every notice rendered and every mail sent: then count.
	testsvc.Eventually(t, 30*time.Second, "the mail queues drained", func() bool {
		var n int
		if err := s.app.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM booking_mail WHERE org_id = $1)
			+ (SELECT count(*) FROM mail_outbox WHERE org_id = $1 AND status = 'queued')`, tn.Org.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	if n := len(refundMails()); n != 1 {
		t.Errorf("%d refund mails, want 1", n)
	}
}

// TestSeatsTakenRefundMail: a payment that succeeds after its holds
// lapsed and one of its seats was taken is refunded in full, and its buyer
// gets one mail (read back from Mailpit) saying why, how much comes back
// and where the payment's page is — also when the provider delivers the
// success again.
func TestSeatsTakenRefundMail(t *testing.T) {
	s := payServerWith(t, ownQueues(t), true)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 2)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	hs := coreHold(t, s.app, tn.Buyers[0], event, seats["C5"], seats["C6"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	// The holds lapse, and someone else takes one of the seats.
	if _, err := s.app.Pool.Exec(t.Context(), `
		UPDATE seat_holds SET created_at = now() - interval '1 hour', held_until = now() - interval '1 second'
		WHERE org_id = $1 AND id = ANY($2::uuid[])`, tn.Org.ID, []uuid.UUID{hs[0].ID, hs[1].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.app.Reaper.Reap(t.Context()); err != nil {
		t.Fatal(err)
	}
	coreHold(t, s.app, tn.Buyers[1], event, seats["C6"])
	payCard(t, buyer, p.ID, "4242424242424242").want(t, http.StatusSeeOther)

	var pay store.Payment
	testsvc.Eventually(t, 10*time.Second, "the refund", func() bool {
		var err error
		pay, err = s.app.Payments.Get(t.Context(), actor(tn.BoxOffice), p.ID)
		return err == nil && pay.Status == store.PaymentRefunded
	})
	if pay.BookingID != uuid.Nil || pay.RefundReason == "" {
		t.Fatalf("payment %+v", pay)
	}
	// The provider delivers its success again.
	var evt string
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT event_id FROM payment_events WHERE org_id = $1 AND payment_id = $2 AND type = $3`,
		tn.Org.ID, p.ID, payment.EventIntentSucceeded).Scan(&evt); err != nil {
		t.Fatal(err)
	}
	body := succeededEvent(evt, pay)
	sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: paySecret}).Header
	s.client().do("POST", "/webhooks/stripe", raw{"application/json", body}, payment.SignatureHeader, sig).want(t, 200)

	subject := "Refund of 50.00 EUR"
	refundMails := func() []testsvc.MailSummary {
		var out []testsvc.MailSummary
		for _, m := range mp.To(tn.Buyers[0].Email) {
			if strings.HasPrefix(m.Subject, subject) {
				out = append(out, m)
			}
		}
		return out
	}
	testsvc.Eventually(t, 30*time.Second, "the refund mail", func() bool { return len(refundMails()) > 0 })
	testsvc.Eventually(t, 30*time.Second, "the mail queue drained", func() bool {
		var n int
		if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM mail_outbox WHERE org_id = $1 AND status = 'queued'`,
			tn.Org.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	if n := len(refundMails()); n != 1 {
		t.Errorf("%d refund mails, want 1", n)
	}
	msg := mp.Message(refundMails()[0].ID)
	link := "/payments/" + p.ID.String()
	for _, part := range []struct{ name, body string }{{"text", msg.Text}, {"html", msg.HTML}} {
		for _, want := range []string{"50.00 EUR", "refunded", "taken", link, "C-6"} {
			if !strings.Contains(part.body, want) {
				t.Errorf("the mail's %s part lacks %q:\n%s", part.name, want, part.body)
			}
		}
	}
	if n := len(mp.To(tn.Buyers[1].Email)); n != 0 {
		t.Errorf("the other buyer got %d mails", n)
	}
}

// TestFailedRefundRetryPages: a refund the provider fails late is listed
// for staff (API and page) and retried from the page; the dashboard shows
// the event's payment figures and links payments.csv.
func TestFailedRefundRetryPages(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["B6"], seats["B7"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	payCard(t, buyer, p.ID, "4242424242424242").want(t, http.StatusSeeOther)
	var got paymentOf
	testsvc.Eventually(t, 10*time.Second, "the booking", func() bool {
		buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
		return got.BookingID != uuid.Nil
	})
	org := s.as(tn.Org, tn.Organizer)
	dash := org.do("GET", "/admin/events/"+event.String(), nil).want(t, 200).doc(t)
	if paid := dash.Find(`[data-testid=revenue] [data-testid=revenue-paid]`).First().Text(); !strings.Contains(paid, "50.00") {
		t.Errorf("dashboard paid %q, want 50.00 EUR for two back seats", paid)
	}
	if dash.Find(`a[href$="/exports/payments.csv"]`).Length() != 1 {
		t.Error("the dashboard does not link payments.csv")
	}

	box := s.as(tn.Org, tn.BoxOffice)
	box.do("POST", "/api/v1/bookings/"+got.BookingID.String()+"/cancel", map[string]any{"reason": "ill"}).want(t, 200)
	pay, err := s.app.Payments.Get(t.Context(), actor(tn.BoxOffice), p.ID)
	if err != nil || len(pay.Refunds) != 1 || pay.Refunds[0].ProviderRefundID == "" {
		t.Fatalf("refunds %+v (%v)", pay.Refunds, err)
	}
	// The provider fails the refund late (the money comes back to the
	// account), and says so.
	if _, err := s.app.Store.PaymentLedger.UpdateIntent(t.Context(), pay.IntentID, func(in *payment.TestIntent) error {
		in.Refunds = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	body := refundFailedEvent("evt_refund_failed_1", pay, pay.Refunds[0])
	sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: paySecret}).Header
	s.client().do("POST", "/webhooks/stripe", raw{"application/json", body}, payment.SignatureHeader, sig).want(t, 200)

	var failed struct {
		Refunds []struct {
			ID     uuid.UUID `json:"id"`
			Status string    `json:"status"`
		} `json:"refunds"`
	}
	box.do("GET", "/api/v1/refunds/failed", nil).want(t, 200).json(t, &failed)
	if len(failed.Refunds) != 1 || failed.Refunds[0].ID != pay.Refunds[0].ID {
		t.Fatalf("failed refunds %+v", failed.Refunds)
	}
	page := box.do("GET", "/box-office/refunds", nil).want(t, 200).doc(t)
	action, ok := page.Find(`[data-refund="` + failed.Refunds[0].ID.String() + `"] form`).Attr("action")
	if !ok {
		t.Fatal("the failed refund has no retry button")
	}
	box.do("POST", action, raw{"application/x-www-form-urlencoded", nil}).want(t, http.StatusSeeOther)
	box.do("GET", "/api/v1/refunds/failed", nil).want(t, 200).json(t, &failed)
	if len(failed.Refunds) != 0 {
		t.Errorf("failed refunds after the retry %+v", failed.Refunds)
	}
	if box.do("GET", "/box-office/refunds", nil).want(t, 200).doc(t).Find(`[data-testid=no-failed-refunds]`).Length() != 1 {
		t.Error("the page still lists failed refunds")
	}
	buyer.do("GET", "/box-office/refunds", nil).want(t, 403)
}

// TestBuyerCancelsPaidBooking: a buyer cancels their own paid booking,
// refunded, only when the organizer allows it and before the cutoff;
// another buyer's is not found.
func TestBuyerCancelsPaidBooking(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 2)
	event, seats := paidEvent(t, s.app, tn)
	buyer := s.as(tn.Org, tn.Buyers[0])
	coreHold(t, s.app, tn.Buyers[0], event, seats["C2"], seats["C3"])
	p, r := startPayment(t, buyer, event, "k")
	r.want(t, http.StatusCreated)
	payCard(t, buyer, p.ID, "4242424242424242").want(t, http.StatusSeeOther)
	var got paymentOf
	testsvc.Eventually(t, 10*time.Second, "the booking", func() bool {
		buyer.do("GET", "/api/v1/payments/"+p.ID.String(), nil).want(t, 200).json(t, &got)
		return got.BookingID != uuid.Nil
	})
	cancel := "/api/v1/me/bookings/" + got.BookingID.String() + "/cancel"
	// Off by default.
	buyer.do("POST", cancel, nil).wantErr(t, http.StatusConflict, "conflict")
	if s.as(tn.Org, tn.Buyers[0]).do("GET", "/bookings/"+got.BookingID.String(), nil).want(t, 200).doc(t).
		Find(`[data-testid=buyer-cancel]`).Length() != 0 {
		t.Error("the booking page offers a cancellation the event does not allow")
	}
	org := s.as(tn.Org, tn.Organizer)
	// Past the cutoff: the event starts in 48 hours.
	org.do("PATCH", "/api/v1/events/"+event.String(), map[string]any{"buyer_cancel_hours": 72}).want(t, 200)
	buyer.do("POST", cancel, nil).wantErr(t, http.StatusConflict, "conflict")
	org.do("PATCH", "/api/v1/events/"+event.String(), map[string]any{"buyer_cancel_hours": 9999}).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
	var ev struct {
		BuyerCancelHours *int `json:"buyer_cancel_hours"`
	}
	org.do("PATCH", "/api/v1/events/"+event.String(), map[string]any{"buyer_cancel_hours": 24}).want(t, 200).json(t, &ev)
	if ev.BuyerCancelHours == nil || *ev.BuyerCancelHours != 24 {
		t.Fatalf("buyer_cancel_hours %v", ev.BuyerCancelHours)
	}
	s.as(tn.Org, tn.Buyers[1]).do("POST", cancel, nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.BoxOffice).do("POST", cancel, nil).wantErr(t, http.StatusForbidden, "forbidden")

	page := buyer.do("GET", "/bookings/"+got.BookingID.String(), nil).want(t, 200).doc(t)
	action, ok := page.Find(`[data-testid=buyer-cancel]`).Attr("action")
	if !ok {
		t.Fatal("the booking page offers no cancellation")
	}
	buyer.do("POST", action, raw{"application/x-www-form-urlencoded", nil}).want(t, http.StatusSeeOther)
	var b bookingPaid
	testsvc.Eventually(t, 10*time.Second, "the refund", func() bool {
		buyer.do("GET", "/api/v1/bookings/"+got.BookingID.String(), nil).want(t, 200).json(t, &b)
		return b.Refund != nil && b.Refund.Status == "succeeded"
	})
	if b.Status != "cancelled" || b.Refund.AmountMinor != 5000 {
		t.Errorf("booking after the buyer's cancellation %+v", b)
	}
	// The page says who cancelled: the buyer, not the box office.
	note := buyer.do("GET", "/bookings/"+got.BookingID.String(), nil).want(t, 200).doc(t).Find(`[data-testid=cancel-note]`)
	if by, _ := note.Attr("data-by"); by != "buyer" || !strings.Contains(note.Text(), "You cancelled this booking") ||
		strings.Contains(note.Text(), "box office") {
		t.Errorf("the buyer's own cancellation reads %q (by %q)", note.Text(), by)
	}
	buyer.do("POST", cancel, nil).want(t, http.StatusConflict)
	org.do("PATCH", "/api/v1/events/"+event.String(), map[string]any{"buyer_cancel_hours": -1}).want(t, 200).json(t, &ev)
	if ev.BuyerCancelHours != nil {
		t.Errorf("buyer_cancel_hours after -1: %v", *ev.BuyerCancelHours)
	}
}

// TestWebhookPathIsRouted: the test provider sends to app.WebhookPath,
// the endpoint to register on Stripe's dashboard; routes.go serves it.
func TestWebhookPathIsRouted(t *testing.T) {
	t.Parallel()
	if app.WebhookPath != "/webhooks/stripe" {
		t.Fatalf("app.WebhookPath %q", app.WebhookPath)
	}
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `"POST `+app.WebhookPath+`"`) {
		t.Errorf("routes.go does not route POST %s", app.WebhookPath)
	}
}

// TestEventFormBuyerCancelHours: the organizer's event form sets and
// clears how long buyers may cancel their paid bookings.
func TestEventFormBuyerCancelHours(t *testing.T) {
	s := payServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 0)
	event, _ := paidEvent(t, s.app, tn)
	org := s.as(tn.Org, tn.Organizer)
	edit := "/admin/events/" + event.String() + "/edit"
	form := func() url.Values {
		v := url.Values{}
		org.do("GET", edit, nil).want(t, 200).doc(t).Find(`form[action="/admin/events/` + event.String() + `"] input`).
			Each(func(_ int, in *goquery.Selection) {
				name, _ := in.Attr("name")
				val, _ := in.Attr("value")
				typ, _ := in.Attr("type")
				_, checked := in.Attr("checked")
				// As a browser sends it: an unchecked box sends nothing.
				if name != "" && (typ != "checkbox" || checked) {
					v.Set(name, val)
				}
			})
		return v
	}
	v := form()
	if _, ok := v["buyer_cancel_hours"]; !ok {
		t.Fatal("the event form has no buyer_cancel_hours field")
	}
	v.Set("buyer_cancel_hours", "12")
	org.do("POST", "/admin/events/"+event.String(), raw{"application/x-www-form-urlencoded", []byte(v.Encode())}).want(t, http.StatusSeeOther)
	e, err := s.app.Store.Events.Event(t.Context(), tn.Org.ID, event)
	if err != nil || e.BuyerCancelHours == nil || *e.BuyerCancelHours != 12 {
		t.Fatalf("buyer_cancel_hours after the form: %v (%v)", e.BuyerCancelHours, err)
	}
	v = form()
	if v.Get("buyer_cancel_hours") != "12" {
		t.Errorf("the form shows %q", v.Get("buyer_cancel_hours"))
	}
	v.Set("buyer_cancel_hours", "")
	org.do("POST", "/admin/events/"+event.String(), raw{"application/x-www-form-urlencoded", []byte(v.Encode())}).want(t, http.StatusSeeOther)
	if e, _ = s.app.Store.Events.Event(t.Context(), tn.Org.ID, event); e.BuyerCancelHours != nil {
		t.Errorf("buyer_cancel_hours after clearing: %d", *e.BuyerCancelHours)
	}
}

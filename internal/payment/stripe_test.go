package payment_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
)

// The Stripe provider's tests run against stripe-mock (scripts/services.sh
// starts it for make test and exports SEATD_STRIPE_MOCK_URL): every request
// is checked against Stripe's own API description, and it answers with
// Stripe's fixtures. It keeps no state, so the tests check what was sent and
// how answers are read, not a lifecycle.

const testKey = "sk_test_seatd"

func stripeMockURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("SEATD_STRIPE_MOCK_URL")
	if u == "" {
		t.Fatal("SEATD_STRIPE_MOCK_URL is not set: run the tests with make test, or eval \"$(scripts/services.sh up test)\"")
	}
	return u
}

// sent is one request that reached stripe-mock through the recorder.
type sent struct {
	method, path string
	header       http.Header
	form         url.Values
}

// recorder is a loopback reverse proxy in front of stripe-mock that notes
// every request, so a test sees the headers and parameters that reached the
// server (the Idempotency-Key above all).
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []sent
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	target, err := url.Parse(stripeMockURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		r.mu.Lock()
		r.seen = append(r.seen, sent{req.Method, req.URL.Path, req.Header.Clone(), form})
		r.mu.Unlock()
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// last is the last request seen; it fails the test when there was none.
func (r *recorder) last(t *testing.T) sent {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		t.Fatal("no request reached stripe-mock")
	}
	return r.seen[len(r.seen)-1]
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func newStripe(t *testing.T) (*payment.Stripe, *recorder) {
	t.Helper()
	rec := newRecorder(t)
	return payment.NewStripe(payment.StripeConfig{SecretKey: testKey, APIBase: rec.URL, Timeout: 5 * time.Second}), rec
}

func TestStripeCreate(t *testing.T) {
	t.Parallel()
	s, rec := newStripe(t)
	pay, org, ev := uuid.NewString(), uuid.NewString(), uuid.NewString()
	key := "pay_" + pay
	in, err := s.Create(t.Context(), payment.CreateRequest{PaymentID: pay, OrgID: org, EventID: ev,
		AmountMinor: 4500, Currency: "EUR", Description: "2 seats, Hamlet", IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(in.ID, "pi_") || in.ClientSecret == "" || in.Status != payment.RequiresPayment ||
		in.AmountMinor != 4500 || in.Currency != "eur" {
		t.Errorf("intent %+v", in)
	}
	req := rec.last(t)
	if req.method != http.MethodPost || req.path != "/v1/payment_intents" {
		t.Errorf("sent %s %s", req.method, req.path)
	}
	if got := req.header.Get("Idempotency-Key"); got != key {
		t.Errorf("Idempotency-Key %q, want %q", got, key)
	}
	for k, want := range map[string]string{
		"amount": "4500", "currency": "eur", "description": "2 seats, Hamlet",
		"automatic_payment_methods[enabled]": "true",
		"metadata[seatd_payment_id]":         pay, "metadata[seatd_org_id]": org, "metadata[seatd_event_id]": ev,
	} {
		if got := req.form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestStripeCreateRefusedLocally: what Stripe would refuse, or what would
// charge twice on a retry, never leaves the process.
func TestStripeCreateRefusedLocally(t *testing.T) {
	t.Parallel()
	s, rec := newStripe(t)
	for _, tc := range []struct {
		name string
		req  payment.CreateRequest
		code apperr.Code
	}{
		{"zero amount", payment.CreateRequest{AmountMinor: 0, Currency: "eur", IdempotencyKey: "k"}, apperr.Invalid},
		{"bad currency", payment.CreateRequest{AmountMinor: 100, Currency: "euro", IdempotencyKey: "k"}, apperr.Invalid},
		{"no idempotency key", payment.CreateRequest{AmountMinor: 100, Currency: "eur"}, apperr.Internal},
	} {
		if _, err := s.Create(t.Context(), tc.req); err == nil || apperr.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	if n := rec.count(); n != 0 {
		t.Errorf("%d requests reached stripe-mock", n)
	}
}

func TestStripeRetrieveAndCancel(t *testing.T) {
	t.Parallel()
	s, rec := newStripe(t)
	in, err := s.Retrieve(t.Context(), "pi_seatdRetrieve")
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != "pi_seatdRetrieve" || in.Status != payment.RequiresPayment {
		t.Errorf("retrieved %+v", in)
	}
	if req := rec.last(t); req.method != http.MethodGet || req.path != "/v1/payment_intents/pi_seatdRetrieve" {
		t.Errorf("sent %s %s", req.method, req.path)
	}
	if _, err := s.Retrieve(t.Context(), ""); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("empty id: %v, want not_found", err)
	}

	in, err = s.Cancel(t.Context(), "pi_seatdCancel")
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != "pi_seatdCancel" {
		t.Errorf("canceled %+v", in)
	}
	req := rec.last(t)
	if req.method != http.MethodPost || req.path != "/v1/payment_intents/pi_seatdCancel/cancel" || req.form.Get("cancellation_reason") != "abandoned" {
		t.Errorf("sent %s %s %v", req.method, req.path, req.form)
	}
}

func TestStripeRefund(t *testing.T) {
	t.Parallel()
	s, rec := newStripe(t)
	for _, tc := range []struct {
		name   string
		amount int64
	}{
		{"whole", 0},
		{"partial", 1500},
	} {
		key := "refund_" + uuid.NewString()
		r, err := s.Refund(t.Context(), payment.RefundRequest{IntentID: "pi_seatdRefund", PaymentID: "p1",
			AmountMinor: tc.amount, Reason: "requested_by_customer", IdempotencyKey: key})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.HasPrefix(r.ID, "re_") || r.IntentID != "pi_seatdRefund" || r.Status != payment.RefundSucceeded {
			t.Errorf("%s: refund %+v", tc.name, r)
		}
		req := rec.last(t)
		if req.path != "/v1/refunds" || req.header.Get("Idempotency-Key") != key {
			t.Errorf("%s: sent %s with key %q", tc.name, req.path, req.header.Get("Idempotency-Key"))
		}
		if req.form.Get("payment_intent") != "pi_seatdRefund" || req.form.Get("metadata[seatd_payment_id]") != "p1" ||
			req.form.Get("reason") != "requested_by_customer" {
			t.Errorf("%s: params %v", tc.name, req.form)
		}
		switch {
		case tc.amount == 0 && req.form.Has("amount"):
			t.Errorf("whole refund sent amount=%s; Stripe refunds what is left when none is sent", req.form.Get("amount"))
		case tc.amount > 0 && (req.form.Get("amount") != "1500" || r.AmountMinor != 1500):
			t.Errorf("partial refund sent amount=%q, answered %d", req.form.Get("amount"), r.AmountMinor)
		}
	}
}

// TestStripeUnavailable: no answer — a closed port, or a server that
// accepts and never answers — is provider_unavailable (502), within the
// provider's short timeout and one retry.
func TestStripeUnavailable(t *testing.T) {
	t.Parallel()
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	for name, base := range map[string]string{"closed port": closed, "silent server": "http://" + silent.Addr().String()} {
		s := payment.NewStripe(payment.StripeConfig{SecretKey: testKey, APIBase: base, Timeout: 300 * time.Millisecond})
		start := time.Now()
		_, err := s.Create(t.Context(), payment.CreateRequest{PaymentID: "p", AmountMinor: 100, Currency: "eur", IdempotencyKey: "k-" + name})
		if apperr.CodeOf(err) != apperr.ProviderUnavailable {
			t.Errorf("%s: %v, want provider_unavailable", name, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: gave up after %s", name, took)
		}
	}
}

// TestStripeBadCredentials: stripe-mock refuses a key that is not a test
// secret key with 401, as Stripe does; that is our configuration, not the
// buyer's input, so it is provider_unavailable, not invalid.
func TestStripeBadCredentials(t *testing.T) {
	t.Parallel()
	s := payment.NewStripe(payment.StripeConfig{SecretKey: "pk_test_notsecret", APIBase: stripeMockURL(t)})
	if _, err := s.Retrieve(t.Context(), "pi_x"); apperr.CodeOf(err) != apperr.ProviderUnavailable {
		t.Errorf("%v, want provider_unavailable", err)
	}
}

package payment_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"seatd/internal/apperr"
	"seatd/internal/payment"
)

// endpoint is a webhook endpoint as the payment flow's route will be: it
// verifies each delivery with payment.Verifier, answers 400 to a bad
// signature and records what it accepted.
type endpoint struct {
	*httptest.Server
	verifier *payment.Verifier

	mu       sync.Mutex
	events   []payment.Event
	refused  int
	failNext int // answer 500 to this many verified deliveries first
}

func newEndpoint(t *testing.T, secret string) *endpoint {
	t.Helper()
	e := &endpoint{verifier: payment.NewVerifier(secret)}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, payment.MaxEventBytes))
	if err != nil {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	ev, err := e.verifier.Verify(body, r.Header.Get(payment.SignatureHeader))
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.refused++
		status := http.StatusInternalServerError
		if apperr.CodeOf(err) == apperr.BadRequest {
			status = http.StatusBadRequest
		}
		http.Error(w, "refused", status)
		return
	}
	if e.failNext > 0 {
		e.failNext--
		http.Error(w, "down for a moment", http.StatusInternalServerError)
		return
	}
	e.events = append(e.events, ev)
}

func (e *endpoint) URL() string { return e.Server.URL + "/webhooks/stripe" }

// got is a copy of the events accepted so far.
func (e *endpoint) got() []payment.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]payment.Event(nil), e.events...)
}

func (e *endpoint) types() []payment.EventType {
	var out []payment.EventType
	for _, ev := range e.got() {
		out = append(out, ev.Type)
	}
	return out
}

// codeOf is err's apperr code, or "" for nil.
func codeOf(err error) apperr.Code {
	if err == nil {
		return ""
	}
	return apperr.CodeOf(err)
}

// isSignature tells whether err is a signature refusal answered with 400.
func isSignature(err error) bool {
	return errors.Is(err, payment.ErrSignature) && apperr.CodeOf(err) == apperr.BadRequest
}

package payment

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"seatd/internal/apperr"
)

// TestProviderConfig is what NewTestProvider needs.
type TestProviderConfig struct {
	// WebhookURL is seatd's own webhook endpoint, where the test provider
	// sends its events as Stripe would (http://127.0.0.1:8080/webhooks/stripe).
	WebhookURL string
	// WebhookSecret signs the events; the endpoint's Verifier checks them
	// with the same secret (STRIPE_WEBHOOK_SECRET, or NewWebhookSecret's).
	WebhookSecret string
	// Ledger keeps the intents; nil keeps them in memory (MemoryLedger).
	Ledger Ledger
	// SettleAfter is how long CardDelayed stays processing; 0 means 3 s.
	SettleAfter time.Duration
	// Client sends the events; nil means one with a 5 s timeout.
	Client *http.Client
	Logger *slog.Logger // nil: slog.Default()
}

// TestProvider is the embedded stand-in for Stripe: the same Provider, no
// money, and a card page (views.TestCardPage) whose Confirm decides the
// outcome by the test card typed. It confirms only through signed events
// sent to seatd's own webhook endpoint over HTTP, so the production
// verification and booking path is the one exercised. Run delivers the
// delayed card's confirmation and retries failed deliveries.
type TestProvider struct {
	ledger      Ledger
	url         string
	secret      string
	settleAfter time.Duration
	client      *http.Client
	log         *slog.Logger
	queue       *deliveries
}

var _ Provider = (*TestProvider)(nil)

// NewTestProvider returns a test provider for cfg.
func NewTestProvider(cfg TestProviderConfig) (*TestProvider, error) {
	u, err := url.Parse(cfg.WebhookURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("payment: test provider webhook URL %q is not an http(s) URL", cfg.WebhookURL)
	}
	if cfg.WebhookSecret == "" {
		return nil, errors.New("payment: test provider needs a webhook secret")
	}
	p := &TestProvider{ledger: cfg.Ledger, url: cfg.WebhookURL, secret: cfg.WebhookSecret,
		settleAfter: cfg.SettleAfter, client: cfg.Client, log: cfg.Logger, queue: newDeliveries()}
	if p.ledger == nil {
		p.ledger = NewMemoryLedger()
	}
	if p.settleAfter <= 0 {
		p.settleAfter = 3 * time.Second
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: 5 * time.Second}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p, nil
}

// NewWebhookSecret returns a fresh signing secret in Stripe's form, for a
// test provider run without STRIPE_WEBHOOK_SECRET. Every process that
// verifies the test provider's events must share it.
func NewWebhookSecret() string {
	return "whsec_" + randomHex(24)
}

// Create implements Provider. The intent id follows from the idempotency
// key, so a repeat finds the first intent in the ledger, as Stripe would.
func (p *TestProvider) Create(ctx context.Context, req CreateRequest) (Intent, error) {
	if err := req.check(); err != nil {
		return Intent{}, err
	}
	now := time.Now()
	id := "pi_test_" + digest(req.IdempotencyKey)
	in, err := p.ledger.AddIntent(ctx, TestIntent{
		ID: id, ClientSecret: id + "_secret_" + randomHex(12),
		PaymentID: req.PaymentID, OrgID: req.OrgID, EventID: req.EventID,
		AmountMinor: req.AmountMinor, Currency: strings.ToLower(req.Currency), Description: req.Description,
		Status: RequiresPayment, Created: now, Changed: now,
	})
	if err != nil {
		return Intent{}, fmt.Errorf("payment: test provider create: %w", err)
	}
	if in.AmountMinor != req.AmountMinor || in.Currency != strings.ToLower(req.Currency) || in.PaymentID != req.PaymentID {
		return Intent{}, apperr.E(apperr.IdempotencyMismatch, "the idempotency key was used for another payment request")
	}
	return in.settled(now).intent(), nil
}

// Retrieve implements Provider. The answer is derived from the stored
// intent and the clock alone: a delayed payment reads succeeded once its
// time has passed, even in a process that never took its card.
func (p *TestProvider) Retrieve(ctx context.Context, intentID string) (Intent, error) {
	in, err := p.ledger.Intent(ctx, intentID)
	if err != nil {
		return Intent{}, fmt.Errorf("payment: test provider retrieve: %w", err)
	}
	return in.settled(time.Now()).intent(), nil
}

// Cancel implements Provider: an intent not paid (nor on the way) ends,
// and payment_intent.canceled is sent.
func (p *TestProvider) Cancel(ctx context.Context, intentID string) (Intent, error) {
	now := time.Now()
	in, err := p.ledger.UpdateIntent(ctx, intentID, func(in *TestIntent) error {
		*in = in.settled(now)
		if in.Status != RequiresPayment && in.Status != Failed {
			return apperr.E(apperr.Conflict, "a %s payment cannot be canceled", in.Status)
		}
		in.Status, in.Changed = Canceled, now
		return nil
	})
	if err != nil {
		return Intent{}, fmt.Errorf("payment: test provider cancel: %w", err)
	}
	p.publish(ctx, in.ID, intentEvent(in, EventIntentCanceled))
	return in.intent(), nil
}

// Refund implements Provider: the refund succeeds at once and
// charge.refunded is sent. A repeat with the same key answers the first
// refund and sends nothing.
func (p *TestProvider) Refund(ctx context.Context, req RefundRequest) (Refund, error) {
	if err := req.check(); err != nil {
		return Refund{}, err
	}
	now := time.Now()
	var made *TestRefund
	in, err := p.ledger.UpdateIntent(ctx, req.IntentID, func(in *TestIntent) error {
		made = nil
		*in = in.settled(now)
		for i := range in.Refunds {
			if r := &in.Refunds[i]; r.IdempotencyKey == req.IdempotencyKey {
				if req.AmountMinor != 0 && req.AmountMinor != r.AmountMinor {
					return apperr.E(apperr.IdempotencyMismatch, "the idempotency key was used for another refund")
				}
				return nil
			}
		}
		if in.Status != Succeeded {
			return apperr.E(apperr.Conflict, "a %s payment cannot be refunded", in.Status)
		}
		left := in.AmountMinor - in.refunded()
		if left == 0 {
			return apperr.E(apperr.Conflict, "the payment is refunded already")
		}
		amount := req.AmountMinor
		if amount == 0 {
			amount = left
		}
		if amount > left {
			return &apperr.Error{Code: apperr.Invalid, Message: "the refund is larger than the payment",
				Fields: map[string]string{"amount_minor": fmt.Sprintf("must be at most %d", left)}}
		}
		r := TestRefund{ID: "re_test_" + digest(in.ID+"\x00"+req.IdempotencyKey), RefundID: req.RefundID,
			IdempotencyKey: req.IdempotencyKey, AmountMinor: amount, Reason: req.Reason, Created: now}
		in.Refunds = append(in.Refunds, r)
		made = &r
		return nil
	})
	if err != nil {
		return Refund{}, fmt.Errorf("payment: test provider refund: %w", err)
	}
	if made != nil {
		p.publish(ctx, in.ID, refundEvent(in, *made))
		return in.refund(*made), nil
	}
	for _, r := range in.Refunds {
		if r.IdempotencyKey == req.IdempotencyKey {
			return in.refund(r), nil
		}
	}
	return Refund{}, errors.New("payment: test provider refund vanished")
}

// Confirm pays intentID with card, as the buyer's submit of the card page.
// clientSecret must be the intent's (handed only to its buyer). The card
// decides: CardSucceeds → succeeded; CardDelayed → processing, succeeded
// after SettleAfter (sent by Run); CardDeclined → the intent (Failed) and an
// error of code PaymentDeclined — the buyer may try again. Each outcome is
// sent as its event before Confirm returns (a failed send is retried by
// Run). A paid or processing intent is answered as it is, with no event.
func (p *TestProvider) Confirm(ctx context.Context, intentID, clientSecret string, card Card) (Intent, error) {
	now := time.Now()
	number, err := card.check(now)
	if err != nil {
		return Intent{}, err
	}
	changed := false
	in, err := p.ledger.UpdateIntent(ctx, intentID, func(in *TestIntent) error {
		changed = false
		if subtle.ConstantTimeCompare([]byte(in.ClientSecret), []byte(clientSecret)) != 1 {
			return errNoIntent // someone else's payment: as if there were none
		}
		*in = in.settled(now)
		switch in.Status {
		case Succeeded, Processing:
			return nil
		case Canceled:
			return apperr.E(apperr.Conflict, "this payment was canceled; start the checkout again")
		}
		in.Attempts++
		in.Changed, in.FailureMessage = now, ""
		switch number {
		case CardSucceeds:
			in.Status = Succeeded
		case CardDelayed:
			in.Status, in.SettlesAt = Processing, now.Add(p.settleAfter)
		default:
			in.Status, in.FailureMessage = Failed, "Your card was declined."
		}
		changed = true
		return nil
	})
	if err != nil {
		return Intent{}, fmt.Errorf("payment: test provider confirm: %w", err)
	}
	if changed {
		typ := map[Status]EventType{Succeeded: EventIntentSucceeded, Processing: EventIntentProcessing, Failed: EventIntentFailed}[in.Status]
		p.publish(ctx, in.ID, intentEvent(in, typ))
		if in.Status == Processing {
			p.queue.add(delivery{at: in.SettlesAt, intentID: in.ID}, p.log)
		}
	}
	if in.Status == Failed {
		return in.intent(), apperr.E(apperr.PaymentDeclined, "%s", in.FailureMessage)
	}
	return in.intent(), nil
}

// intent is in as the Provider answers it.
func (in TestIntent) intent() Intent {
	out := Intent{ID: in.ID, Status: in.Status, AmountMinor: in.AmountMinor, Currency: in.Currency,
		ClientSecret: in.ClientSecret, PaymentID: in.PaymentID, OrgID: in.OrgID, Created: in.Created}
	if in.Status == Failed {
		out.FailureMessage = in.FailureMessage
	}
	return out
}

// refund is r of in as the Provider answers it.
func (in TestIntent) refund(r TestRefund) Refund {
	return Refund{ID: r.ID, IntentID: in.ID, Status: RefundSucceeded, AmountMinor: r.AmountMinor,
		Currency: in.Currency, PaymentID: in.PaymentID, OrgID: in.OrgID, RefundID: r.RefundID}
}

// digest names a test object after what makes it unique: 24 hex digits.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

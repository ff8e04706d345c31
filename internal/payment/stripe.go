package payment

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"seatd/internal/apperr"
)

// StripeConfig is what NewStripe needs.
type StripeConfig struct {
	SecretKey string // STRIPE_SECRET_KEY (sk_… or a restricted rk_… key)
	// APIBase is the API's base URL: "" for Stripe itself; stripe-mock's
	// URL in tests (SEATD_STRIPE_API_BASE).
	APIBase string
	// Timeout bounds one attempt (connect, request, answer); 0 means 10 s.
	// A buyer is waiting on checkout, and an unknown outcome is safe to
	// send again with the same idempotency key.
	Timeout time.Duration
	Logger  *slog.Logger // nil: slog.Default()
}

// stripeRetries is how many times stripe-go sends a request again after a
// network failure or a 409/5xx, with the same idempotency key: one more
// try rides out a dropped connection without keeping the buyer waiting.
const stripeRetries = 1

// Stripe is the Provider backed by Stripe's PaymentIntents API.
type Stripe struct {
	c *stripe.Client
}

var _ Provider = (*Stripe)(nil)

// NewStripe returns the Stripe provider for cfg. It makes no request.
func NewStripe(cfg StripeConfig) *Stripe {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: min(cfg.Timeout, 3*time.Second), KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = min(cfg.Timeout, 5*time.Second)
	tr.ResponseHeaderTimeout = cfg.Timeout
	tr.MaxIdleConnsPerHost = 16
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: cfg.Timeout, Transport: tr},
		MaxNetworkRetries: stripe.Int64(stripeRetries),
		LeveledLogger:     slogLeveled{cfg.Logger},
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(cfg.APIBase)
	}
	return &Stripe{c: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))}
}

// Create implements Provider.
func (s *Stripe) Create(ctx context.Context, req CreateRequest) (Intent, error) {
	if err := req.check(); err != nil {
		return Intent{}, err
	}
	p := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(req.AmountMinor),
		Currency: stripe.String(strings.ToLower(req.Currency)),
		// The Payment Element offers whatever the account has enabled
		// (cards, wallets, local methods) without a code change here.
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{Enabled: stripe.Bool(true)},
		Metadata:                map[string]string{MetaPayment: req.PaymentID, MetaOrg: req.OrgID, MetaEvent: req.EventID},
	}
	if req.Description != "" {
		p.Description = stripe.String(req.Description)
	}
	p.SetIdempotencyKey(req.IdempotencyKey)
	pi, err := s.c.V1PaymentIntents.Create(ctx, p)
	if err != nil {
		return Intent{}, classify("create", err)
	}
	return intentOf(pi), nil
}

// Retrieve implements Provider.
func (s *Stripe) Retrieve(ctx context.Context, intentID string) (Intent, error) {
	if intentID == "" {
		// An empty id would ask for the list endpoint, not an intent.
		return Intent{}, apperr.E(apperr.NotFound, "no payment intent id")
	}
	pi, err := s.c.V1PaymentIntents.Retrieve(ctx, intentID, nil)
	if err != nil {
		return Intent{}, classify("retrieve", err)
	}
	return intentOf(pi), nil
}

// Cancel implements Provider.
func (s *Stripe) Cancel(ctx context.Context, intentID string) (Intent, error) {
	if intentID == "" {
		return Intent{}, apperr.E(apperr.NotFound, "no payment intent id")
	}
	p := &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String(string(stripe.PaymentIntentCancellationReasonAbandoned))}
	pi, err := s.c.V1PaymentIntents.Cancel(ctx, intentID, p)
	if err != nil {
		return Intent{}, classify("cancel", err)
	}
	return intentOf(pi), nil
}

// Refund implements Provider.
func (s *Stripe) Refund(ctx context.Context, req RefundRequest) (Refund, error) {
	if err := req.check(); err != nil {
		return Refund{}, err
	}
	p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(req.IntentID)}
	if req.AmountMinor > 0 {
		p.Amount = stripe.Int64(req.AmountMinor)
	}
	if req.Reason != "" {
		p.Reason = stripe.String(req.Reason)
	}
	p.Metadata = map[string]string{}
	for k, v := range map[string]string{MetaPayment: req.PaymentID, MetaOrg: req.OrgID, MetaRefund: req.RefundID} {
		if v != "" {
			p.Metadata[k] = v
		}
	}
	p.SetIdempotencyKey(req.IdempotencyKey)
	r, err := s.c.V1Refunds.Create(ctx, p)
	if err != nil {
		return Refund{}, classify("refund", err)
	}
	return refundOf(r), nil
}

// intentOf maps Stripe's intent to ours.
func intentOf(pi *stripe.PaymentIntent) Intent {
	in := Intent{
		ID:           pi.ID,
		Status:       intentStatus(pi),
		AmountMinor:  pi.Amount,
		Currency:     string(pi.Currency),
		ClientSecret: pi.ClientSecret,
		PaymentID:    pi.Metadata[MetaPayment],
		OrgID:        pi.Metadata[MetaOrg],
	}
	if pi.Created > 0 {
		in.Created = time.Unix(pi.Created, 0)
	}
	if in.Status == Failed {
		in.FailureMessage = pi.LastPaymentError.Msg
	}
	return in
}

// intentStatus: Stripe has no failed status. A declined attempt sends the
// intent back to requires_payment_method with last_payment_error set (and
// its message), which is how Retrieve tells the reconciler it failed.
func intentStatus(pi *stripe.PaymentIntent) Status {
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		return Succeeded
	case stripe.PaymentIntentStatusProcessing, stripe.PaymentIntentStatusRequiresCapture:
		// requires_capture (authorized, not captured) does not happen with
		// automatic capture; money is promised but not settled.
		return Processing
	case stripe.PaymentIntentStatusCanceled:
		return Canceled
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		if e := pi.LastPaymentError; e != nil && (e.Type == stripe.ErrorTypeCard || e.Msg != "") {
			return Failed
		}
	}
	return RequiresPayment
}

// refundOf maps Stripe's refund to ours.
func refundOf(r *stripe.Refund) Refund {
	out := Refund{
		ID:          r.ID,
		Status:      refundStatus(r.Status),
		AmountMinor: r.Amount,
		Currency:    string(r.Currency),
		PaymentID:   r.Metadata[MetaPayment],
		OrgID:       r.Metadata[MetaOrg],
		RefundID:    r.Metadata[MetaRefund],
	}
	if r.Status == stripe.RefundStatusFailed {
		out.FailureReason = string(r.FailureReason)
	}
	if r.PaymentIntent != nil {
		out.IntentID = r.PaymentIntent.ID
	}
	return out
}

func refundStatus(s stripe.RefundStatus) RefundStatus {
	switch s {
	case stripe.RefundStatusSucceeded:
		return RefundSucceeded
	case stripe.RefundStatusFailed:
		return RefundFailed
	case stripe.RefundStatusCanceled:
		return RefundCanceled
	default: // pending, requires_action
		return RefundPending
	}
}

// slogLeveled hands stripe-go's log lines to slog. Its info lines (one per
// request) go to debug: the flow logs what matters with its own context.
type slogLeveled struct{ l *slog.Logger }

func (s slogLeveled) Debugf(format string, v ...any) {
	s.l.Debug("stripe: " + fmt.Sprintf(format, v...))
}
func (s slogLeveled) Infof(format string, v ...any) {
	s.l.Debug("stripe: " + fmt.Sprintf(format, v...))
}
func (s slogLeveled) Warnf(format string, v ...any) { s.l.Warn("stripe: " + fmt.Sprintf(format, v...)) }
func (s slogLeveled) Errorf(format string, v ...any) {
	s.l.Warn("stripe: " + fmt.Sprintf(format, v...))
}

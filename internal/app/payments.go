package app

import (
	"context"
	"net"
	"time"

	"seatd/internal/bookingmail"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/telemetry"
)

// WebhookPath is where the payment provider's webhooks are received
// (docs/payments.md): the endpoint to register on Stripe's dashboard, and
// where the test provider sends its events.
const WebhookPath = "/webhooks/stripe"

// newPayments builds the payment provider the configuration names —
// Stripe with both keys set, else the embedded test provider, whose
// intents are kept beside their payments — and the payment flow on it.
func (a *App) newPayments() error {
	secret, name := a.Cfg.StripeWebhookSecret, store.ProviderTest
	log := a.Log.With("component", "payments")
	if a.Cfg.StripeEnabled() {
		name = store.ProviderStripe
		a.PaymentProvider = payment.NewStripe(payment.StripeConfig{SecretKey: a.Cfg.StripeSecretKey,
			APIBase: a.Cfg.StripeAPIBase, Logger: log})
	} else {
		if secret == "" {
			// Each process signs its own test events and sends them to
			// itself, so no secret needs sharing.
			secret = payment.NewWebhookSecret()
		}
		tp, err := payment.NewTestProvider(payment.TestProviderConfig{WebhookURL: selfURL(a.Cfg.Addr) + WebhookPath,
			WebhookSecret: secret, Ledger: a.Store.PaymentLedger, Logger: log})
		if err != nil {
			return err
		}
		a.TestPayments, a.PaymentProvider = tp, tp
	}
	m := telemetry.NewPayments(a.Registry, func() (telemetry.PaymentState, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, oldest, failed, err := a.Store.Payments.State(ctx)
		return telemetry.PaymentState{Processing: n, ProcessingOldest: oldest, RefundsFailed: failed}, err == nil
	})
	a.Payments = hold.NewPayments(a.Engine, a.PaymentProvider, payment.NewVerifier(secret), hold.PaymentOptions{
		Provider: name, TTL: a.Cfg.PaymentTTL, ReconcileAfter: a.Cfg.PaymentReconcileAfter,
		ReconcileEvery: a.Cfg.PaymentReconcileEvery, SeatsTakenMail: bookingmail.SeatsTaken(a.Cfg.PublicURL),
	}, m)
	return nil
}

// selfURL is the base URL this process serves on, seen from itself:
// loopback when it listens on every address.
func selfURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://127.0.0.1:8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

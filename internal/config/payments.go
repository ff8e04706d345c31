package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// MaxPaymentTTL caps SEATD_PAYMENT_TTL (hold.MaxPaymentTTL).
const MaxPaymentTTL = time.Hour

// stripeProblems checks the Stripe settings. Messages never repeat a key:
// they end up in logs.
func (c Config) stripeProblems() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if (c.StripeSecretKey == "") != (c.StripePublishableKey == "") {
		// The server creates intents with the secret key, the page confirms
		// them with the publishable one: one without the other cannot sell.
		bad("STRIPE_SECRET_KEY and STRIPE_PUBLISHABLE_KEY: set both (payments through Stripe) or neither (the test provider)")
	}
	mode := func(key string, prefixes ...string) string {
		for _, p := range prefixes {
			for _, m := range []string{"test", "live"} {
				if strings.HasPrefix(key, p+"_"+m+"_") {
					return m
				}
			}
		}
		return ""
	}
	secretMode, publicMode := mode(c.StripeSecretKey, "sk", "rk"), mode(c.StripePublishableKey, "pk")
	if c.StripeSecretKey != "" && secretMode == "" {
		bad("STRIPE_SECRET_KEY: must be a secret key (sk_test_…, sk_live_…) or a restricted key (rk_…), never the publishable one")
	}
	if c.StripePublishableKey != "" && publicMode == "" {
		bad("STRIPE_PUBLISHABLE_KEY: must be a publishable key (pk_test_…, pk_live_…)")
	}
	if secretMode != "" && publicMode != "" && secretMode != publicMode {
		bad("STRIPE_SECRET_KEY is a %s key but STRIPE_PUBLISHABLE_KEY a %s key: use the pair of one mode", secretMode, publicMode)
	}
	if c.StripeWebhookSecret != "" && !strings.HasPrefix(c.StripeWebhookSecret, "whsec_") {
		bad("STRIPE_WEBHOOK_SECRET: must be the endpoint's signing secret (whsec_…)")
	}
	if c.StripeAPIBase != "" {
		if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("SEATD_STRIPE_API_BASE: %q must be an http(s) URL such as https://api.stripe.com", c.StripeAPIBase)
		}
	}
	return errs
}

// StripeEnabled tells whether buyers pay through Stripe (both keys set);
// otherwise the embedded test provider takes payments, and no money moves.
func (c Config) StripeEnabled() bool { return c.StripeSecretKey != "" }

// The values of SEATD_PAYMENTS.
const (
	// PaymentsRequired: a buyer's seats are theirs only once the payment
	// provider confirmed the payment; the direct purchase answers
	// payment_required for seats that cost something.
	PaymentsRequired = "required"
	// PaymentsOff: a buyer's purchase books at once, without payment (the
	// tests of everything else, the bench's sale without payments).
	PaymentsOff = "off"
)

// paymentsProblems checks SEATD_PAYMENTS.
func (c Config) paymentsProblems() []error {
	switch c.Payments {
	case PaymentsRequired, PaymentsOff:
		return nil
	}
	return []error{fmt.Errorf("SEATD_PAYMENTS: %q must be required or off", c.Payments)}
}

// BuyersPay tells whether buyers must pay through the payment
// provider (SEATD_PAYMENTS=required) rather than purchase directly.
func (c Config) BuyersPay() bool { return c.Payments == PaymentsRequired }

package config

import (
	"strings"
	"testing"
)

// TestStripeSettings: both Stripe keys or neither, each of its kind and
// of one mode; the webhook secret and API base of their form; and no
// message repeats a key.
func TestStripeSettings(t *testing.T) {
	t.Parallel()
	const sk, pk, wh = "sk_test_51abcZQ9a", "pk_test_51abcZQ9b", "whsec_abcZQ9c"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		stripe  bool
		problem string // "" when valid; else a word of the message
	}{
		{"none: test provider", nil, false, ""},
		{"both keys", map[string]string{"STRIPE_SECRET_KEY": sk, "STRIPE_PUBLISHABLE_KEY": pk}, true, ""},
		{"restricted key", map[string]string{"STRIPE_SECRET_KEY": "rk_live_x", "STRIPE_PUBLISHABLE_KEY": "pk_live_y"}, true, ""},
		{"all three", map[string]string{"STRIPE_SECRET_KEY": sk, "STRIPE_PUBLISHABLE_KEY": pk, "STRIPE_WEBHOOK_SECRET": wh}, true, ""},
		{"test provider with a secret", map[string]string{"STRIPE_WEBHOOK_SECRET": wh}, false, ""},
		{"stripe-mock base", map[string]string{"SEATD_STRIPE_API_BASE": "http://127.0.0.1:26362"}, false, ""},
		{"secret only", map[string]string{"STRIPE_SECRET_KEY": sk}, false, "set both"},
		{"publishable only", map[string]string{"STRIPE_PUBLISHABLE_KEY": pk}, false, "set both"},
		{"keys swapped", map[string]string{"STRIPE_SECRET_KEY": pk, "STRIPE_PUBLISHABLE_KEY": sk}, false, "never the publishable"},
		{"modes mixed", map[string]string{"STRIPE_SECRET_KEY": "sk_live_ZQ9d", "STRIPE_PUBLISHABLE_KEY": pk}, false, "one mode"},
		{"webhook secret of another kind", map[string]string{"STRIPE_WEBHOOK_SECRET": "abcZQ9e"}, false, "whsec_"},
		{"api base not a URL", map[string]string{"SEATD_STRIPE_API_BASE": "127.0.0.1:26362"}, false, "SEATD_STRIPE_API_BASE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.env)
			if tc.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.StripeEnabled() != tc.stripe {
					t.Errorf("StripeEnabled %v, want %v", c.StripeEnabled(), tc.stripe)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("%v, want an error saying %q", err, tc.problem)
			}
			if strings.Contains(err.Error(), "ZQ9") {
				t.Errorf("the message repeats a key: %v", err)
			}
		})
	}
}

// TestProductionStripeNeedsWebhookSecret: serve refuses production with
// Stripe keys and no webhook signing secret; the test provider and
// development start without one.
func TestProductionStripeNeedsWebhookSecret(t *testing.T) {
	t.Parallel()
	keys := map[string]string{"STRIPE_SECRET_KEY": "sk_live_a", "STRIPE_PUBLISHABLE_KEY": "pk_live_b"}
	for _, tc := range []struct {
		name    string
		env     string
		keys    bool
		secret  string
		refused bool
	}{
		{"production, Stripe, no secret", "production", true, "", true},
		{"production, Stripe, secret", "production", true, "whsec_x", false},
		{"production, test provider", "production", false, "", false},
		{"development, Stripe, no secret", "development", true, "", false},
	} {
		env := map[string]string{"SEATD_ENV": tc.env, "COOKIE_SECURE": "true", "STRIPE_WEBHOOK_SECRET": tc.secret,
			"SEATD_SMTP_URL": "smtp://mail.example:25", "SEATD_TICKET_SECRET": testTicketSecret}
		if tc.keys {
			for k, v := range keys {
				env[k] = v
			}
		}
		c, err := load(t, env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err = c.ServeProblem()
		if (err != nil) != tc.refused {
			t.Errorf("%s: %v, refused want %v", tc.name, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "STRIPE_WEBHOOK_SECRET") {
			t.Errorf("%s: refusal does not name STRIPE_WEBHOOK_SECRET: %v", tc.name, err)
		}
	}
}

// TestPaymentsSetting: buyers pay by default; off turns the direct
// purchase back on; anything else is refused by name.
func TestPaymentsSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value   string
		pay     bool
		problem bool
	}{
		{"", true, false},
		{"required", true, false},
		{"off", false, false},
		{"optional", false, true},
	} {
		t.Run("SEATD_PAYMENTS="+tc.value, func(t *testing.T) {
			env := map[string]string{}
			if tc.value != "" {
				env["SEATD_PAYMENTS"] = tc.value
			}
			c, err := load(t, env)
			if tc.problem {
				if err == nil || !strings.Contains(err.Error(), "SEATD_PAYMENTS") {
					t.Fatalf("%v, want an error naming SEATD_PAYMENTS", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.BuyersPay() != tc.pay {
				t.Errorf("BuyersPay %v, want %v", c.BuyersPay(), tc.pay)
			}
		})
	}
}

package config

import "errors"

// ServeProblem is why `seatd serve` must not start with this
// configuration, or nil. Production needs Secure cookies (a session cookie
// sent over plain HTTP can be read on the way), a mail server (without
// one, confirmations and links would wait in the outbox for ever), its
// own ticket secret (with none, or the published development one, the
// ticket signing keys and webhook secrets would be as good as unsealed),
// with Stripe, the webhook signing secret (without it no payment's
// confirmation can be verified, so every buyer would pay and get
// nothing), and webhooks kept off private addresses (with
// SEATD_WEBHOOK_ALLOW_PRIVATE any tenant could make seatd post to the
// network it runs in).
func (c Config) ServeProblem() error {
	var errs []error
	if c.Env == EnvProduction && !c.CookieSecure {
		errs = append(errs, errors.New("SEATD_ENV=production needs COOKIE_SECURE=true (session cookies only over HTTPS)"))
	}
	if c.Env == EnvProduction && c.SMTPURL == "" {
		errs = append(errs, errors.New("SEATD_ENV=production needs SEATD_SMTP_URL (without it mail is never sent)"))
	}
	if c.Env == EnvProduction && (c.TicketSecret == "" || c.TicketSecret == DevTicketSecret) {
		errs = append(errs, errors.New("SEATD_ENV=production needs SEATD_TICKET_SECRET (its own, at least 32 characters: openssl rand -base64 32)"))
	}
	if c.Env == EnvProduction && c.WebhookAllowPrivate {
		errs = append(errs, errors.New("SEATD_ENV=production refuses SEATD_WEBHOOK_ALLOW_PRIVATE=true (tenants' webhooks would reach the network seatd runs in)"))
	}
	if c.Env == EnvProduction && c.StripeEnabled() && c.StripeWebhookSecret == "" {
		errs = append(errs, errors.New("SEATD_ENV=production with Stripe keys needs STRIPE_WEBHOOK_SECRET (the signing secret of the endpoint https://<host>/webhooks/stripe)"))
	}
	return errors.Join(errs...)
}

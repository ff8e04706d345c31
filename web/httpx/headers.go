package httpx

import (
	"net/http"

	"seatd/internal/apperr"
)

// ContentSecurityPolicy allows only this origin's scripts, styles and
// connections; no inline script anywhere.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// StripeContentSecurityPolicy is ContentSecurityPolicy plus Stripe's
// sources, for the one page that pays with Stripe's Payment Element
// (Stripe.js, its frames, its API); every other page keeps the strict one.
const StripeContentSecurityPolicy = "default-src 'self'; script-src 'self' https://js.stripe.com https://*.js.stripe.com; " +
	"style-src 'self'; img-src 'self' data:; connect-src 'self' https://api.stripe.com; " +
	"frame-src https://js.stripe.com https://*.js.stripe.com https://hooks.stripe.com; frame-ancestors 'none'; " +
	"base-uri 'self'; form-action 'self'"

// SecurityHeaders sets the headers every response carries; hsts adds
// Strict-Transport-Security (COOKIE_SECURE: served over HTTPS only).
func SecurityHeaders(hsts bool, next http.Handler) http.Handler {
	fixed := http.Header{
		"Content-Security-Policy":    {ContentSecurityPolicy},
		"X-Content-Type-Options":     {"nosniff"},
		"Referrer-Policy":            {"same-origin"},
		"X-Frame-Options":            {"DENY"},
		"Cross-Origin-Opener-Policy": {"same-origin"},
		// Pages and answers carry tenants' data (holders' emails,
		// bookings): no browser history or shared cache keeps them. The
		// checksummed static assets set their own long cache over this.
		"Cache-Control": {"no-store"},
	}
	if hsts {
		fixed["Strict-Transport-Security"] = []string{"max-age=31536000; includeSubDomains"}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setFixed(w.Header(), fixed)
		next.ServeHTTP(w, r)
	})
}

// CrossOrigin refuses cross-site state-changing browser requests. Requests
// without Sec-Fetch-Site and Origin (curl, API clients) pass: they carry no
// ambient browser credentials to abuse. Nor do the requests exempt says
// so of: API-key requests (session.BearerKey), which never use the
// session cookie.
func CrossOrigin(errs *Errors, exempt func(*http.Request) bool, next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		errs.Write(w, r, apperr.E(apperr.Forbidden, "cross-site requests are refused"))
	}))
	protected := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

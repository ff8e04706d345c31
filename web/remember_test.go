package web

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"seatd/internal/testenv"
)

// TestKeepMeSignedIn: a sign-in with "keep me signed in" (the API's
// remember, the form's checkbox) gets a persistent session cookie of 30
// days, and the session is stored that long, idle timeout or not;
// without it the cookie has no Expires or Max-Age (it ends with the
// browser) and the session keeps the idle timeout.
func TestKeepMeSignedIn(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	u := tn.Buyers[0]
	const month = 30 * 24 * time.Hour
	sessionCookie := func(r response) *http.Cookie {
		t.Helper()
		for _, line := range r.header.Values("Set-Cookie") {
			c, err := http.ParseSetCookie(line)
			if err == nil && strings.HasSuffix(c.Name, "seatd_session") {
				return c
			}
		}
		t.Fatalf("no session cookie set: %v", r.header.Values("Set-Cookie"))
		return nil
	}
	storedFor := func(c *http.Cookie) time.Duration {
		t.Helper()
		var exp time.Time
		h := sha256.Sum256([]byte(c.Value))
		if err := s.app.Pool.QueryRow(t.Context(), `SELECT expiry FROM sessions WHERE token = $1`,
			base64.RawURLEncoding.EncodeToString(h[:])).Scan(&exp); err != nil {
			t.Fatal(err)
		}
		return time.Until(exp)
	}
	body := func(remember bool) map[string]any {
		return map[string]any{"org": tn.Org.Slug, "email": u.Email, "password": testenv.Password, "remember": remember}
	}
	near := func(d, want time.Duration) bool { return d > want-time.Minute && d <= want+2*time.Second }

	kept := sessionCookie(s.client().do("POST", "/login", body(true)).want(t, http.StatusOK))
	if !near(time.Duration(kept.MaxAge)*time.Second, month) || !near(time.Until(kept.Expires), month) {
		t.Fatalf("remembered: Max-Age %d, Expires %v; want 30 days", kept.MaxAge, kept.Expires)
	}
	if d := storedFor(kept); !near(d, month) {
		t.Fatalf("remembered session stored for %v, want 30 days", d)
	}

	plain := sessionCookie(s.client().do("POST", "/login", body(false)).want(t, http.StatusOK))
	if plain.MaxAge != 0 || !plain.Expires.IsZero() {
		t.Fatalf("browser session: Max-Age %d, Expires %v; want neither", plain.MaxAge, plain.Expires)
	}
	if d := storedFor(plain); d > s.app.Cfg.SessionIdleTimeout+time.Second {
		t.Fatalf("browser session stored for %v, past the idle timeout %v", d, s.app.Cfg.SessionIdleTimeout)
	}

	// The form's checkbox.
	form := url.Values{"org": {tn.Org.Slug}, "email": {u.Email}, "password": {testenv.Password}, "remember": {"1"}}
	byForm := sessionCookie(s.client().do("POST", "/login", raw{contentType: "application/x-www-form-urlencoded", body: []byte(form.Encode())}).
		want(t, http.StatusSeeOther))
	if !near(time.Duration(byForm.MaxAge)*time.Second, month) {
		t.Fatalf("form with the box ticked: Max-Age %d, want 30 days", byForm.MaxAge)
	}
	page := s.client().do("GET", "/login", nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), `name="remember"`) {
		t.Fatal("the sign-in page has no keep-me-signed-in box")
	}
}

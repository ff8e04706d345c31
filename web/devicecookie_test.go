package web

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"seatd/internal/config"
	"seatd/internal/testenv"
)

// TestLockoutSparesKnownDevice: a stranger's failed sign-ins lock the
// account's untrusted attempts (the right password from a new browser is
// 429), but the browser the owner signed in with before (its device
// cookie) still signs in; a forged or other account's device cookie is
// untrusted; failures from the owner's browser lock that browser only.
func TestLockoutSparesKnownDevice(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.LoginAccountFailures = 3
		c.LoginLockout = time.Minute
		c.LoginLockoutMax = time.Minute
	})
	tn := testenv.NewTenant(t, s.app, 2)
	owner := tn.Buyers[0].Email
	login := func(c *client, password string) response {
		return c.do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": owner, "password": password},
			"X-Forwarded-For", randomIPv4())
	}
	known := s.client()
	login(known, testenv.Password).want(t, http.StatusOK)
	// Another account signed in on a second browser: its cookie is not
	// the owner's.
	elsewhere := s.as(tn.Org, tn.Buyers[1])

	for i := range 3 {
		login(s.client(), "stranger-guess-"+strconv.Itoa(i)).wantErr(t, http.StatusUnauthorized, "unauthorized")
	}
	login(s.client(), testenv.Password).wantErr(t, http.StatusTooManyRequests, "rate_limited")
	login(elsewhere, testenv.Password).wantErr(t, http.StatusTooManyRequests, "rate_limited")
	forged := s.client()
	forged.hdr = []string{"Cookie", deviceCookieOf(t, known) + "0"}
	login(forged, testenv.Password).wantErr(t, http.StatusTooManyRequests, "rate_limited")

	// The owner's browser gets in, again and again.
	login(known, testenv.Password).want(t, http.StatusOK)
	login(known, testenv.Password).want(t, http.StatusOK)

	// Failures from the owner's browser lock that browser alone.
	for i := range 3 {
		login(known, "typo-"+strconv.Itoa(i)).wantErr(t, http.StatusUnauthorized, "unauthorized")
	}
	login(known, testenv.Password).wantErr(t, http.StatusTooManyRequests, "rate_limited")
}

// deviceCookieOf is the client's device cookie as a Cookie header
// ("name=value"); the test fails without one.
func deviceCookieOf(t *testing.T, c *client) string {
	t.Helper()
	req, _ := http.NewRequest("GET", c.base+"/", nil)
	for _, k := range c.hc.Jar.Cookies(req.URL) {
		if len(k.Name) > 13 && k.Name[:13] == "seatd_device_" {
			return k.Name + "=" + k.Value
		}
	}
	t.Fatal("no device cookie after signing in")
	return ""
}

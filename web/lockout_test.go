package web

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// randomIPv4 is a documentation address unlikely to be used by another
// run within the same minute (rate-limit keys live in a shared Redis).
func randomIPv4() string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("198.18.%d.%d", b[0], b[1])
}

// randomIPv6Net is a random /64 of the documentation range, as
// "2001:db8:x:y:".
func randomIPv6Net() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("2001:db8:%x:%x:", uint16(b[0])<<8|uint16(b[1]), uint16(b[2])<<8|uint16(b[3]))
}

// trustLoopback makes the test servers believe X-Forwarded-For from the
// test client (loopback is the proxy).
func trustLoopback(c *config.Config) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// TestLoginLimitsPerAccount: failed logins of one account, from ever new
// addresses and across two processes, lock that account (even the right
// password is refused, 429 with Retry-After) and only that account; the
// lock lifts after the lockout, and a successful login clears the count.
func TestLoginLimitsPerAccount(t *testing.T) {
	mod := func(c *config.Config) {
		trustLoopback(c)
		c.LoginAccountFailures = 3
		c.LoginLockout = time.Second
		c.LoginLockoutMax = 2 * time.Second
	}
	s1 := newTestServer(t, mod)
	s2 := newTestServer(t, mod)
	tn := testenv.NewTenant(t, s1.app, 2)
	victim, other := tn.Buyers[0].Email, tn.Buyers[1].Email
	login := func(s *testServer, email, password string) response {
		return s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": email, "password": password},
			"X-Forwarded-For", randomIPv4())
	}
	for i, s := range []*testServer{s1, s2, s1} {
		login(s, victim, "wrong-password-"+strconv.Itoa(i)).wantErr(t, http.StatusUnauthorized, "unauthorized")
	}
	// Locked on both processes, right password or not, whatever the IP.
	for _, s := range []*testServer{s1, s2} {
		r := login(s, victim, testenv.Password)
		r.wantErr(t, http.StatusTooManyRequests, "rate_limited")
		if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 || n > 2 {
			t.Fatalf("Retry-After %q, want 1 or 2 seconds", r.header.Get("Retry-After"))
		}
	}
	// Another account of the same organization is not affected.
	login(s2, other, testenv.Password).want(t, http.StatusOK)
	// The lock lifts after the lockout.
	testsvc.Eventually(t, 5*time.Second, "the account unlocked after a 1 s lockout", func() bool {
		return login(s2, victim, testenv.Password).status == http.StatusOK
	})
	// The success cleared the failures: one more is not a lockout.
	login(s1, victim, "wrong-again-1").wantErr(t, http.StatusUnauthorized, "unauthorized")
	login(s1, victim, testenv.Password).want(t, http.StatusOK)
	// Unknown accounts lock too (an attacker learns nothing by probing).
	ghost := "nobody-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@x.example"
	for i := range 3 {
		login(s1, ghost, "guess-"+strconv.Itoa(i)).wantErr(t, http.StatusUnauthorized, "unauthorized")
	}
	login(s2, ghost, "guess-3").wantErr(t, http.StatusTooManyRequests, "rate_limited")
}

// TestLoginLimitGroupsIPv6: the per-IP login limit counts a /64 as one
// client, through a trusted proxy's X-Forwarded-For; a spoofed header
// from an untrusted peer does not get a fresh budget.
func TestLoginLimitGroupsIPv6(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.LoginRatePerMinute = 3
		c.LoginAccountFailures = 1000
	})
	tn := testenv.NewTenant(t, s.app, 1)
	net64 := randomIPv6Net()
	login := func(ip string) response {
		return s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[0].Email, "password": testenv.Password},
			"X-Forwarded-For", ip)
	}
	oneLimiterMinute(s)
	for i := 1; i <= 3; i++ {
		login(net64+":"+strconv.Itoa(i)).want(t, http.StatusOK)
	}
	login(net64+":ffff").wantErr(t, http.StatusTooManyRequests, "rate_limited")
	// The next /64 is another client.
	login(randomIPv6Net()+":1").want(t, http.StatusOK)

	// Untrusted peer: the header is ignored, so every request is the
	// peer's own.
	u := newTestServer(t, func(c *config.Config) { c.LoginRatePerMinute = 100_000 })
	r := httptest.NewRequest("POST", "/login", nil)
	r.RemoteAddr = "127.0.0.1:1234"
	r.Header.Set("X-Forwarded-For", "203.0.113.5")
	if got := u.srv.limits.Subject(r); got != "127.0.0.1" {
		t.Fatalf("untrusted X-Forwarded-For gave subject %q", got)
	}
}

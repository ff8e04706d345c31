package web

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seatd/internal/config"
	"seatd/internal/testenv"
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
	testenv.Eventually(t, 5*time.Second, "the account unlocked after a 1 s lockout", func() bool {
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

// TestAccountLockoutBackoff: the lockout doubles with each further
// failure up to the maximum, and is counted in the process while Redis is
// down.
func TestAccountLockoutBackoff(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newLimiter(nil, "test", func() bool { return false }, slog.New(slog.DiscardHandler),
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"limit"}))
	l.now = func() time.Time { return now }
	cfg := config.Defaults()
	cfg.LoginAccountFailures, cfg.LoginLockout, cfg.LoginLockoutMax = 3, 10*time.Second, 35*time.Second
	l.configure(cfg)
	a := l.accounts
	for n, want := range map[int]time.Duration{3: 10 * time.Second, 4: 20 * time.Second, 5: 35 * time.Second, 40: 35 * time.Second} {
		if got := a.backoff(n); got != want {
			t.Errorf("backoff after %d failures: %v, want %v", n, got, want)
		}
	}
	ctx := context.Background()
	acct := accountKey("org", "a@x.example")
	for range 2 {
		a.failed(ctx, acct)
		if err := a.check(ctx, acct); err != nil {
			t.Fatalf("locked before the threshold: %v", err)
		}
	}
	a.failed(ctx, acct)
	err := a.check(ctx, acct)
	if le, ok := err.(*limitedError); !ok || le.retryAfter != 10 {
		t.Fatalf("after 3 failures without Redis: %v, want a 10 s lockout", err)
	}
	if other := accountKey("org", "b@x.example"); a.check(ctx, other) != nil {
		t.Fatal("another account is locked")
	}
	now = now.Add(11 * time.Second)
	if err := a.check(ctx, acct); err != nil {
		t.Fatalf("still locked after the lockout: %v", err)
	}
	a.failed(ctx, acct)
	if le, ok := a.check(ctx, acct).(*limitedError); !ok || le.retryAfter != 20 {
		t.Fatalf("4th failure: want a 20 s lockout, got %v", le)
	}
	a.succeeded(ctx, acct)
	now = now.Add(21 * time.Second)
	a.failed(ctx, acct)
	if err := a.check(ctx, acct); err != nil {
		t.Fatalf("a success did not clear the failures: %v", err)
	}
}

// TestClientIPTrustedProxies: X-Forwarded-For counts only when the peer
// is a trusted proxy, and then its right-most untrusted address is the
// client.
func TestClientIPTrustedProxies(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		name    string
		peer    string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"no trusted proxies: header ignored", "10.1.1.1:5000", []string{"203.0.113.9"}, nil, "10.1.1.1"},
		{"untrusted peer: header ignored", "198.51.100.7:5000", []string{"203.0.113.9"}, proxies, "198.51.100.7"},
		{"trusted peer: the client it names", "10.1.1.1:5000", []string{"203.0.113.9"}, proxies, "203.0.113.9"},
		{"spoofed entries left of the client", "10.1.1.1:5000", []string{"1.1.1.1, 6.6.6.6, 203.0.113.9"}, proxies, "203.0.113.9"},
		{"a chain of trusted proxies", "10.1.1.1:5000", []string{"203.0.113.9, 10.2.2.2", "10.3.3.3"}, proxies, "203.0.113.9"},
		{"every hop trusted: the left-most", "10.1.1.1:5000", []string{"10.9.9.9, 10.2.2.2"}, proxies, "10.9.9.9"},
		{"no header", "10.1.1.1:5000", nil, proxies, "10.1.1.1"},
		{"garbage from the proxy: the proxy", "10.1.1.1:5000", []string{"203.0.113.9, bogus"}, proxies, "10.1.1.1"},
		{"entry with a port", "10.1.1.1:5000", []string{"203.0.113.9:4711"}, proxies, "203.0.113.9"},
		{"IPv6 proxy and client", "[fd00::1]:5000", []string{"2001:db8::7"}, proxies, "2001:db8::7"},
		{"IPv4-mapped peer", "[::ffff:10.1.1.1]:5000", []string{"203.0.113.9"}, proxies, "203.0.113.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientIP(r, tc.trusted); got.String() != tc.want {
				t.Fatalf("client %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRateSubjectIPv6: IPv6 clients are counted by /64, IPv4 ones by
// address.
func TestRateSubjectIPv6(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"192.0.2.1", "192.0.2.2", false},
		{"::ffff:192.0.2.1", "192.0.2.1", true},
	}
	for _, tc := range cases {
		x := rateSubject(netip.MustParseAddr(tc.a).Unmap())
		y := rateSubject(netip.MustParseAddr(tc.b).Unmap())
		if (x == y) != tc.same {
			t.Errorf("%s → %s, %s → %s: same %v, want %v", tc.a, x, tc.b, y, x == y, tc.same)
		}
	}
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
	if got := u.srv.subject(r); got != "127.0.0.1" {
		t.Fatalf("untrusted X-Forwarded-For gave subject %q", got)
	}
}

package ratelimit

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seatd/internal/config"
)

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
	a := NewLockout(l, cfg)
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
	if le, ok := err.(*limited); !ok || le.retryAfter != 10 {
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
	if le, ok := a.check(ctx, acct).(*limited); !ok || le.retryAfter != 20 {
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

package web

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
)

// TestSignupLimitPerNetwork: sign-ups have a limit of their own, per
// client network (/24): past it, a sign-up from any address of the
// network is 429 with Retry-After, while sign-ins from it go on (their
// limit is another) and another network signs up.
func TestSignupLimitPerNetwork(t *testing.T) {
	t.Parallel()
	const limit = 2
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.SignupRatePerMinute = limit
	})
	oneLimiterMinute(s)
	tn := testenv.NewTenant(t, s.app, 1)
	net24 := randomNet24()
	signup := func(from string) response {
		return s.client().do("POST", "/o/"+tn.Org.Slug+"/signup",
			map[string]string{"email": "n-" + uuid.NewString()[:8] + "@x.example", "password": "a-long-password-9"}, "X-Forwarded-For", from)
	}
	for i := range limit {
		signup(net24+strconv.Itoa(i+1)).want(t, http.StatusAccepted)
	}
	r := signup(net24 + "200")
	r.wantErr(t, http.StatusTooManyRequests, "rate_limited")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[0].Email, "password": testenv.Password},
		"X-Forwarded-For", net24+"201").want(t, http.StatusOK)
	signup(randomNet24()+"1").want(t, http.StatusAccepted)
}

// TestNewSessionBurstPerNetwork: a burst of new sessions (sign-ins of
// many accounts) from one network is limited: past the limit a right
// password from any address of that /24 is 429 with Retry-After and no
// session begins; another network signs in.
func TestNewSessionBurstPerNetwork(t *testing.T) {
	t.Parallel()
	const limit = 3
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.NewSessionRatePerMinute = limit
	})
	oneLimiterMinute(s)
	tn := testenv.NewTenant(t, s.app, limit+2)
	net24 := randomNet24()
	signIn := func(c *client, i int, from string) response {
		return c.do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[i].Email, "password": testenv.Password},
			"X-Forwarded-For", from)
	}
	for i := range limit {
		signIn(s.client(), i, net24+strconv.Itoa(i+1)).want(t, http.StatusOK)
	}
	c := s.client()
	r := signIn(c, limit, net24+"99")
	r.wantErr(t, http.StatusTooManyRequests, "rate_limited")
	if r.header.Get("Retry-After") == "" || c.cookie() != "" {
		t.Fatalf("Retry-After %q, session cookie %q: want one, and no session", r.header.Get("Retry-After"), c.cookie())
	}
	signIn(s.client(), limit+1, randomNet24()+"1").want(t, http.StatusOK)
}

// randomNet24 is a random /24 of 10.0.0.0/8, as "10.x.y.": a network of
// its own for a test of a per-network limit (the counts of every test
// share one Redis).
func randomNet24() string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("10.%d.%d.", b[0], b[1])
}

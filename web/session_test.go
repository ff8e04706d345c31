package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/web/api"
)

// withToken sends a request carrying exactly the given session token.
func (s *testServer) withToken(t testing.TB, token, method, path string) response {
	t.Helper()
	c := s.client()
	u, _ := url.Parse(s.ts.URL)
	c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: s.srv.sessions.CookieName(), Value: token, Path: "/"}})
	return c.do(method, path, nil)
}

// TestSessionFixation: the token changes at login (also when the browser
// arrives with one planted by an attacker), and after logout the old token
// is refused.
func TestSessionFixation(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)

	// A token planted before login (fixation attempt) is not kept.
	c := s.client()
	u, _ := url.Parse(s.ts.URL)
	const planted = "attacker-chosen-token-0123456789abcdefghijk"
	c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: s.srv.sessions.CookieName(), Value: planted, Path: "/"}})
	r := c.login(tn.Org.Slug, tn.Buyers[0].Email, testenv.Password)
	first := c.cookie()
	if first == "" || first == planted {
		t.Fatalf("token after login %q, planted %q", first, planted)
	}
	checkCookie(t, r.header)

	// Logging in again (another account, same browser) renews the token and
	// the previous one stops working at once.
	c.login(tn.Org.Slug, tn.Buyers[0].Email, testenv.Password)
	second := c.cookie()
	if second == first {
		t.Fatal("token did not change at the second login")
	}
	s.withToken(t, first, "GET", "/api/v1/me").wantErr(t, http.StatusUnauthorized, "unauthorized")
	s.withToken(t, second, "GET", "/api/v1/me").want(t, http.StatusOK)

	// Logout: the cookie is expired and the old token refused.
	r = c.do("POST", "/logout", nil).want(t, http.StatusNoContent)
	if sc := r.header.Get("Set-Cookie"); !strings.Contains(sc, "Max-Age=0") && !strings.Contains(sc, "Max-Age=-1") {
		t.Fatalf("logout did not expire the cookie: %q", sc)
	}
	s.withToken(t, second, "GET", "/api/v1/me").wantErr(t, http.StatusUnauthorized, "unauthorized")
	s.withToken(t, second, "POST", "/api/v1/events/"+testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 1).ID.String()+"/checkout").
		wantErr(t, http.StatusUnauthorized, "unauthorized")
	c.do("GET", "/api/v1/me", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")
	t.Logf("tokens: planted→%s…→%s… (all distinct); old tokens refused with 401 after re-login and after logout", first[:6], second[:6])
}

func checkCookie(t *testing.T, h http.Header) {
	t.Helper()
	sc := h.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Fatalf("session cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Fatalf("cookie is Secure though COOKIE_SECURE is off: %q", sc)
	}
}

// TestSessionCookieSecure: COOKIE_SECURE makes the cookie Secure (and
// __Host- prefixed).
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.CookieSecure = true })
	tn := testenv.NewTenant(t, s.app, 1)
	r := s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[0].Email, "password": testenv.Password}).
		want(t, http.StatusOK)
	sc := r.header.Get("Set-Cookie")
	if !strings.HasPrefix(sc, "__Host-seatd_session=") || !strings.Contains(sc, "Secure") || !strings.Contains(sc, "HttpOnly") {
		t.Fatalf("secure cookie: %q", sc)
	}
	if r.header.Get("Strict-Transport-Security") == "" {
		t.Fatal("no HSTS header with COOKIE_SECURE")
	}
}

// TestSessionCacheRoundTrips: with the cache, authenticated requests stop
// costing Postgres round trips; without it each costs a read and a write.
func TestSessionCacheRoundTrips(t *testing.T) {
	t.Parallel()
	const n = 50
	for _, cached := range []bool{true, false} {
		s := serveApp(t, newTestServer(t, nil).app, options{noSessionCache: !cached})
		tn := testenv.NewTenant(t, s.app, 1)
		c := s.as(tn.Org, tn.Buyers[0])
		before := s.srv.sessions.Stats()
		for range n {
			c.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)
		}
		after := s.srv.sessions.Stats()
		finds, commits := after.Finds-before.Finds, after.Commits-before.Commits
		t.Logf("cache=%v: %d authenticated GETs cost %d session reads and %d session writes in Postgres", cached, n, finds, commits)
		if cached && finds+commits > 10 {
			t.Fatalf("with cache: %d reads + %d writes for %d requests", finds, commits, n)
		}
		if !cached && (finds != n || commits != n) {
			t.Fatalf("without cache: %d reads + %d writes, want %d each", finds, commits, n)
		}
	}
}

// BenchmarkAuthenticatedGET measures authenticated GETs (GET /api/v1/me:
// session + tenancy middleware, no other database work) with and without
// the session cache, from parallel clients.
//
//	go test -run '^$' -bench AuthenticatedGET -benchtime 3s ./web/
func BenchmarkAuthenticatedGET(b *testing.B) {
	for _, cached := range []bool{true, false} {
		name := "cache"
		if !cached {
			name = "no-cache"
		}
		b.Run(name, func(b *testing.B) {
			base := newTestServer(b, nil)
			s := serveApp(b, base.app, options{noSessionCache: !cached})
			tn := testenv.NewTenant(b, s.app, 1)
			token := s.as(tn.Org, tn.Buyers[0]).cookie()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			b.Cleanup(tr.CloseIdleConnections)
			hc := &http.Client{Transport: tr}
			cookie := s.srv.sessions.CookieName() + "=" + token
			var mu sync.Mutex
			var failed error
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequestWithContext(context.Background(), "GET", s.ts.URL+"/api/v1/me", nil)
					req.Header.Set("Cookie", cookie)
					res, err := hc.Do(req)
					if err == nil {
						_ = res.Body.Close()
						if res.StatusCode != http.StatusOK {
							err = &statusErr{res.StatusCode}
						}
					}
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
				}
			})
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			st := s.srv.sessions.Stats()
			b.ReportMetric(float64(st.Finds+st.Commits)/float64(b.N), "pg-trips/req")
		})
	}
}

type statusErr struct{ status int }

func (e *statusErr) Error() string { return http.StatusText(e.status) }

// TestFormLogin: form posts get 303 redirects; the session works after.
func TestFormLogin(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	c := s.client()
	form := url.Values{"org": {tn.Org.Slug}, "email": {strings.ToUpper(tn.Buyers[0].Email)}, "password": {testenv.Password}, "submit": {"Sign in"}}
	r := c.do("POST", "/login", raw{contentType: "application/x-www-form-urlencoded", body: []byte(form.Encode())}).
		want(t, http.StatusSeeOther)
	if r.header.Get("Location") != "/" || c.cookie() == "" {
		t.Fatalf("form login: Location %q, cookie %q", r.header.Get("Location"), c.cookie())
	}
	var me api.AccountJSON
	c.do("GET", "/api/v1/me", nil).want(t, http.StatusOK).json(t, &me)
	if me.User.ID != tn.Buyers[0].ID || me.Org.Slug != tn.Org.Slug || me.User.Role != "buyer" {
		t.Fatalf("me %+v", me)
	}
	signup := url.Values{"email": {"form-" + uuid.NewString()[:8] + "@x.example"}, "password": {testenv.Password}}
	s.client().do("POST", "/o/"+tn.Org.Slug+"/signup", raw{contentType: "application/x-www-form-urlencoded", body: []byte(signup.Encode())}).
		want(t, http.StatusSeeOther)
	c.do("POST", "/logout", raw{contentType: "application/x-www-form-urlencoded"}).want(t, http.StatusSeeOther)
	c.do("GET", "/api/v1/me", nil).want(t, http.StatusUnauthorized)
	t.Logf("form login, signup and logout: 303 to /; session valid between, 401 after")
}

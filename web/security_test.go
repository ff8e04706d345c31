package web

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/web/httpx"
	"seatd/web/session"
)

// TestCrossOrigin: a cross-site state-changing request is refused (403);
// a same-origin one and a non-browser one (no Origin) are served.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	c := s.as(tn.Org, tn.Buyers[0])
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	evil := []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}

	holds := orgRows(t, s.app, "seat_holds", tn.Org.ID)
	c.do("POST", path, map[string]string{"seat_id": seats[0].String()}, evil...).wantErr(t, http.StatusForbidden, "forbidden")
	c.do("POST", path, map[string]string{"seat_id": seats[0].String()}, "Origin", "https://evil.example").
		wantErr(t, http.StatusForbidden, "forbidden") // old browsers: Origin alone
	c.do("DELETE", "/api/v1/holds/"+uuid.NewString(), nil, evil...).wantErr(t, http.StatusForbidden, "forbidden")
	c.do("POST", "/logout", nil, evil...).wantErr(t, http.StatusForbidden, "forbidden")
	s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[0].Email, "password": testenv.Password}, evil...).
		wantErr(t, http.StatusForbidden, "forbidden")
	if n := orgRows(t, s.app, "seat_holds", tn.Org.ID); n != holds {
		t.Fatalf("cross-site hold created a row: %d → %d", holds, n)
	}
	// Reads are not state-changing: a cross-site GET is answered.
	c.do("GET", "/api/v1/events", nil, evil...).want(t, http.StatusOK)

	c.do("POST", path, map[string]string{"seat_id": seats[1].String()}, "Origin", s.ts.URL, "Sec-Fetch-Site", "same-origin").
		want(t, http.StatusCreated)
	c.do("POST", path, map[string]string{"seat_id": seats[2].String()}, "Origin", s.ts.URL).want(t, http.StatusCreated)
	c.do("POST", path, map[string]string{"seat_id": seats[3].String()}).want(t, http.StatusCreated)
	t.Logf("cross-site: 5 writes refused 403, 0 rows; same-origin (2 ways) and no-Origin holds: 201")
}

// TestSecurityHeaders: every answer (success, error, refusal, panic)
// carries the security headers, and a panic is a 500 JSON error.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	s.srv.mux.HandleFunc("GET /test/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	c := s.client()
	want := map[string]string{
		"Content-Security-Policy": httpx.ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
		"X-Frame-Options":         "DENY",
	}
	for _, rq := range []struct {
		method, path string
		hdr          []string
		status       int
	}{
		{"GET", "/healthz", nil, 200},
		{"GET", "/api/v1/events", nil, 401},
		{"GET", "/api/v1/nope", nil, 404},
		{"POST", "/logout", []string{"Origin", "https://evil.example"}, 403},
		{"GET", "/test/panic", nil, 500},
	} {
		r := c.do(rq.method, rq.path, nil, rq.hdr...).want(t, rq.status)
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Fatalf("%s %s: %s = %q, want %q", rq.method, rq.path, k, got, v)
			}
		}
		if rq.status >= 400 {
			e := r.errBody(t)
			if rq.status == 500 && (e.Error != "internal" || e.Message != httpx.InternalMessage) {
				t.Fatalf("panic answer: %s", r.body)
			}
		}
	}
	t.Logf("5 answers (200, 401, 404, 403, panic→500 JSON) all carry CSP, nosniff, Referrer-Policy, X-Frame-Options")
}

// oneLimiterMinute keeps s's per-minute counts in one minute for the rest
// of the test, so a count begun just before the minute turns is not reset
// mid-test: the limiter's clock starts at the top of the current minute
// and runs on in real time (a test takes far less than a minute).
func oneLimiterMinute(s *testServer) {
	start := time.Now()
	top := start.Truncate(time.Minute)
	s.srv.limits.SetClock(func() time.Time { return top.Add(time.Since(start)) })
}

// TestHoldRateLimit: the per-user hold limit answers 429 rate_limited with
// Retry-After; another user is not affected.
func TestHoldRateLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	s := newTestServer(t, func(c *config.Config) { c.HoldRatePerMinute = limit })
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	c := s.as(tn.Org, tn.Buyers[0])
	oneLimiterMinute(s)
	statuses := []int{}
	for i := range limit {
		statuses = append(statuses, c.do("POST", path, map[string]string{"seat_id": seats[i].String()}).want(t, http.StatusCreated).status)
	}
	r := c.do("POST", path, map[string]string{"seat_id": seats[limit].String()})
	r.wantErr(t, http.StatusTooManyRequests, "rate_limited")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	statuses = append(statuses, r.status)
	s.as(tn.Org, tn.Buyers[1]).do("POST", path, map[string]string{"seat_id": seats[limit+1].String()}).want(t, http.StatusCreated)
	t.Logf("limit %d/min: statuses %v, Retry-After %ds; another buyer still 201", limit, statuses, retry)
}

// TestLoginRateLimit: the per-IP login limit answers 429 even for the
// right password; sign-up has a limit of its own
// (TestSignupLimitPerNetwork) and goes on.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	const limit = 2
	prefix := "wt" + uuid.NewString()[:8] // its own login counters
	s := newTestServer(t, func(c *config.Config) { c.LoginRatePerMinute = limit; c.KeyPrefix = prefix })
	tn := testenv.NewTenant(t, s.app, 1)
	body := map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[0].Email, "password": testenv.Password}
	oneLimiterMinute(s)
	c := s.client()
	c.do("POST", "/login", body).want(t, http.StatusOK)
	c.do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": tn.Buyers[0].Email, "password": "wrong-password"}).
		want(t, http.StatusUnauthorized)
	r := c.do("POST", "/login", body)
	r.wantErr(t, http.StatusTooManyRequests, "rate_limited")
	s.client().do("POST", "/o/"+tn.Org.Slug+"/signup", map[string]string{"email": "x@y.example", "password": testenv.Password}).
		want(t, http.StatusAccepted)
	t.Logf("login limit %d/min per IP: 200, 401, then 429 (Retry-After %ss); signup not counted there", limit, r.header.Get("Retry-After"))
}

// TestRateLimitWithoutRedis: with Redis unreachable the limit still holds,
// counted in the process.
func TestRateLimitWithoutRedis(t *testing.T) {
	t.Parallel()
	const limit = 2
	s := newTestServer(t, func(c *config.Config) {
		c.HoldRatePerMinute = limit
		c.RedisURL = "redis://127.0.0.1:1/0" // nothing listens there
	})
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	c := s.as(tn.Org, tn.Buyers[0])
	oneLimiterMinute(s)
	var got []int
	for i := range limit + 1 {
		got = append(got, c.do("POST", path, map[string]string{"seat_id": seats[i].String()}).status)
	}
	if got[0] != http.StatusCreated || got[1] != http.StatusCreated || got[2] != http.StatusTooManyRequests {
		t.Fatalf("statuses without Redis %v, want [201 201 429]", got)
	}
	t.Logf("Redis down: holds went through Postgres, statuses %v with limit %d (in-process count)", got, limit)
}

// TestHoldLimit: the core's per-buyer cap surfaces as 409 hold_limit.
func TestHoldLimit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.MaxHoldsPerBuyer = 2 })
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	c := s.as(tn.Org, tn.Buyers[0])
	c.do("POST", path, map[string]any{"seat_ids": []string{seats[0].String(), seats[1].String()}}).want(t, http.StatusCreated)
	e := c.do("POST", path, map[string]string{"seat_id": seats[2].String()}).wantErr(t, http.StatusConflict, "hold_limit")
	c.do("POST", path, map[string]string{"seat_id": seats[0].String()}).want(t, http.StatusOK) // own seat again: fine
	t.Logf("cap 2: two holds 201, third 409 hold_limit (%q), holding an own seat again 200", e.Message)
}

// TestHijackAndFlush: the middleware chain keeps http.Hijacker and Flusher
// reachable (WebSocket upgrades, streaming), for a signed-in user too.
func TestHijackAndFlush(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	s.srv.mux.HandleFunc("GET /test/hijack", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := session.ActorFrom(r.Context()); !ok {
			http.Error(w, "no actor", http.StatusUnauthorized)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 299 Hijacked\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = rw.Flush()
	})
	s.srv.mux.HandleFunc("GET /test/flush", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("a"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	tn := testenv.NewTenant(t, s.app, 1)
	c := s.as(tn.Org, tn.Buyers[0])
	c.do("GET", "/test/hijack", nil).want(t, 299)
	c.do("GET", "/test/flush", nil).want(t, http.StatusOK)
	t.Logf("hijack through observe, headers, cross-origin and session middleware: 299 from the raw connection; flush: 200")
}

// TestUnknownRoutes: unknown API paths and wrong methods answer JSON
// errors (404, 405 with Allow).
func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	c := s.client()
	c.do("GET", "/api/v1/nope", nil).wantErr(t, http.StatusNotFound, "not_found")
	r := c.do("PUT", "/api/v1/events", nil)
	r.wantErr(t, http.StatusMethodNotAllowed, "method_not_allowed")
	if r.header.Get("Allow") == "" {
		t.Fatal("405 without Allow")
	}
	c.do("DELETE", "/api/v1/events/"+uuid.NewString()+"/holds", nil).wantErr(t, http.StatusMethodNotAllowed, "method_not_allowed")
	t.Logf("unknown API path: 404 JSON; wrong method: 405 JSON with Allow %q", r.header.Get("Allow"))
}

// TestNoStore: every page, fragment, redirect and API answer, signed in or
// not, success or error, says Cache-Control: no-store; only the
// checksummed static assets are cached.
func TestNoStore(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	h := coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[0])[0]
	e := ev.ID.String()
	buyer := s.as(tn.Org, tn.Buyers[0])
	org := s.as(tn.Org, tn.Organizer)
	for _, rq := range []struct {
		c            *client
		method, path string
		status       int
	}{
		{buyer, "GET", "/events", 200},
		{buyer, "GET", "/e/" + e, 200},
		{buyer, "GET", "/e/" + e + "/cart", 200},
		{buyer, "GET", "/", http.StatusSeeOther},
		{org, "GET", "/admin/events/" + e, 200},
		{org, "GET", "/admin/events/" + e + "/audit", 200},
		{org, "GET", "/box-office/events/" + e, 200},
		{org, "GET", "/box-office/events/" + e + "/holds", 200},
		{buyer, "GET", "/box-office/events/" + e, 403},
		{buyer, "GET", "/api/v1/me", 200},
		{buyer, "GET", "/api/v1/events/" + e + "/seats", 200},
		{buyer, "DELETE", "/api/v1/holds/" + h.ID.String(), 204},
		{buyer, "GET", "/api/v1/events/" + e + "/occupancy", 403},
		{s.client(), "GET", "/api/v1/events", 401},
		{s.client(), "GET", "/login", 200},
		{s.client(), "GET", "/events", http.StatusSeeOther},
	} {
		r := rq.c.do(rq.method, rq.path, nil).want(t, rq.status)
		want := "no-store"
		if strings.HasSuffix(rq.path, "/seats") {
			// The seat list is kept per seats version with an ETag: the
			// browser keeps its own copy and asks again every time (304
			// when unchanged), and no shared cache keeps it.
			want = "private, no-cache"
		}
		if got := r.header.Get("Cache-Control"); got != want {
			t.Errorf("%s %s (%d): Cache-Control %q, want %s", rq.method, rq.path, rq.status, got, want)
		}
	}
	css := s.srv.assets.Path("css/app.css")
	if got := buyer.do("GET", css, nil).want(t, 200).header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
		t.Errorf("%s: Cache-Control %q, want the assets' long cache", css, got)
	}
	t.Logf("15 answers (pages, fragments, redirects, API 2xx/4xx) say no-store, the seat list private, no-cache; the static CSS stays immutable")
}

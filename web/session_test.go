package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
)

// withToken sends a request carrying exactly the given session token.
func (s *testServer) withToken(t testing.TB, token, method, path string) response {
	t.Helper()
	c := s.client()
	u, _ := url.Parse(s.ts.URL)
	c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: s.srv.sessions.Cookie.Name, Value: token, Path: "/"}})
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
	c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: s.srv.sessions.Cookie.Name, Value: planted, Path: "/"}})
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

// TestSessionLogoutElsewhere: another process serves a cached token
// without asking Postgres while it hears every announced end, and a token
// logged out on one process is refused there at once and by the other
// process within the cache's freshness.
func TestSessionLogoutElsewhere(t *testing.T) {
	t.Parallel()
	x := newTestServer(t, nil)
	y := serveApp(t, x.app, options{}) // a second "process": its own session cache
	tn := testenv.NewTenant(t, x.app, 1)
	c := x.as(tn.Org, tn.Buyers[0])
	token := c.cookie()
	y.withToken(t, token, "GET", "/api/v1/me").want(t, http.StatusOK) // cached on y now
	told := func() bool {
		st := y.srv.sstore
		st.mu.Lock()
		defer st.mu.Unlock()
		e := st.entries[storedToken(token)]
		return e != nil && st.told(e, st.now())
	}
	testenv.Eventually(t, 3*time.Second, "y trusts its copy on announcements", func() bool {
		y.withToken(t, token, "GET", "/api/v1/me").want(t, http.StatusOK)
		return told()
	})
	f0 := y.srv.sstore.dbFinds.Load()
	// Not a wait for a condition: requests spread over longer than the
	// cache's freshness (sessionFresh), every 100 ms.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		y.withToken(t, token, "GET", "/api/v1/me").want(t, http.StatusOK)
	}
	if n := y.srv.sstore.dbFinds.Load() - f0; n != 0 {
		t.Fatalf("y read the session %d times in 1.5 s while hearing every end, want 0", n)
	}

	c.do("POST", "/logout", nil).want(t, http.StatusNoContent)
	out := time.Now()
	x.withToken(t, token, "GET", "/api/v1/me").wantErr(t, http.StatusUnauthorized, "unauthorized")
	testenv.Eventually(t, 2*time.Second, "the token refused by the other process", func() bool {
		return y.withToken(t, token, "GET", "/api/v1/me").status == http.StatusUnauthorized
	})
	t.Logf("logout refused at once on its own process; the other process refused the token after %s (bound %s)",
		time.Since(out).Round(time.Millisecond), sessionFresh)
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
		f0, c0 := s.srv.sstore.dbFinds.Load(), s.srv.sstore.dbCommits.Load()
		for range n {
			c.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)
		}
		finds, commits := s.srv.sstore.dbFinds.Load()-f0, s.srv.sstore.dbCommits.Load()-c0
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
			cookie := s.srv.sessions.Cookie.Name + "=" + token
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
			b.ReportMetric(float64(s.srv.sstore.dbFinds.Load()+s.srv.sstore.dbCommits.Load())/float64(b.N), "pg-trips/req")
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
	var me accountJSON
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

// memStore is an scs store counting its calls, with the expiry read that
// sessionStore.find does, on the test's clock.
type memStore struct {
	mu      sync.Mutex
	now     func() time.Time
	data    map[string]memRow
	finds   int
	commits int
	// during, if set, runs inside the next findSession, as a change
	// committed while the read is in flight would.
	during func()
}

type memRow struct {
	b      []byte
	expiry time.Time
}

func (m *memStore) Find(token string) ([]byte, bool, error) {
	b, _, ok, err := m.findSession(context.Background(), token)
	return b, ok, err
}

func (m *memStore) findSession(_ context.Context, token string) ([]byte, time.Time, bool, error) {
	m.mu.Lock()
	m.finds++
	r, ok := m.data[token]
	during := m.during
	m.during = nil
	m.mu.Unlock()
	if during != nil {
		during()
	}
	if !ok || !m.now().Before(r.expiry) {
		return nil, time.Time{}, false, nil
	}
	return r.b, r.expiry, true, nil
}

func (m *memStore) Commit(token string, b []byte, expiry time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	m.data[token] = memRow{b, expiry}
	return nil
}

func (m *memStore) Delete(token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, token)
	return nil
}

// newMemSessions is a session cache on a memStore and a fake clock.
func newMemSessions() (*sessionStore, *memStore, *time.Time) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	db := &memStore{data: map[string]memRow{}, now: clock}
	s := &sessionStore{db: db, find: db.findSession, fresh: time.Second, touch: time.Minute, now: clock,
		entries: map[string]*sessionEntry{}, lastCleanup: now}
	return s, db, &now
}

// TestSessionStoreRules pins the cache's rules on a fake clock: reads are
// trusted for `fresh`, idle refreshes are written once `touch` has passed,
// changes and deletes go through at once.
func TestSessionStoreRules(t *testing.T) {
	t.Parallel()
	s, db, clock := newMemSessions()
	idle := 2 * time.Hour
	step := func(d time.Duration) { *clock = clock.Add(d) }
	now := func() time.Time { return *clock }
	expect := func(finds, commits int) {
		t.Helper()
		if db.finds != finds || db.commits != commits {
			t.Fatalf("store calls: %d finds, %d commits; want %d, %d", db.finds, db.commits, finds, commits)
		}
	}

	if err := s.Commit("t", []byte("v1"), now().Add(idle)); err != nil { // login
		t.Fatal(err)
	}
	expect(0, 1)
	for range 10 { // requests within a second: no store call
		if b, ok, _ := s.Find("t"); !ok || string(b) != "v1" {
			t.Fatal("cached session not found")
		}
		_ = s.Commit("t", []byte("v1"), now().Add(idle))
		step(50 * time.Millisecond)
	}
	expect(0, 1)
	step(time.Second) // stale: read again, still no write (expiry moved < touch)
	_, _, _ = s.Find("t")
	_ = s.Commit("t", []byte("v1"), now().Add(idle))
	expect(1, 1)
	step(time.Minute) // expiry moved by more than touch: written
	_, _, _ = s.Find("t")
	_ = s.Commit("t", []byte("v1"), now().Add(idle))
	expect(2, 2)
	_ = s.Commit("t", []byte("v2"), now().Add(idle)) // data changed: written at once
	expect(2, 3)
	if err := s.Delete("t"); err != nil { // logout: refused at once, no stale read
		t.Fatal(err)
	}
	if _, ok, _ := s.Find("t"); ok {
		t.Fatal("deleted session still found")
	}
	expect(3, 3)
	// Deleted elsewhere (another process): found from cache for < fresh.
	_ = s.Commit("u", []byte("w"), now().Add(idle))
	_ = db.Delete("u")
	if _, ok, _ := s.Find("u"); !ok {
		t.Fatal("expected the cached copy within fresh")
	}
	step(time.Second)
	if _, ok, _ := s.Find("u"); ok {
		t.Fatal("session deleted elsewhere still accepted after fresh")
	}
	// A session past its stored expiry is not served from the cache.
	_ = s.Commit("x", []byte("y"), now().Add(100*time.Millisecond))
	step(200 * time.Millisecond)
	_ = db.Delete("x")
	if _, ok, _ := s.Find("x"); ok {
		t.Fatal("expired session served from cache")
	}
	t.Logf("10 requests in 0.5 s: 0 store calls; refresh written after touch (%s); logout immediate; remote delete seen after fresh (%s)", s.touch, s.fresh)
}

// TestSessionStoreTrustsAnnouncements pins the rules of trusting a copy on
// announced ends (sessionEnds) on a fake clock: kept without reads while
// every end is heard within fresh, dropped when its end is announced, and
// read again every fresh when the proof is old, the listener is away or
// came back, or an end raced the read.
func TestSessionStoreTrustsAnnouncements(t *testing.T) {
	t.Parallel()
	s, db, clock := newMemSessions()
	step := func(d time.Duration) { *clock = clock.Add(d) }
	now := func() time.Time { return *clock }
	expiry := now().Add(time.Hour)
	reads := func(token string, d time.Duration, heard bool) int {
		t.Helper()
		f0 := db.finds
		for end := now().Add(d); now().Before(end); step(100 * time.Millisecond) {
			if heard {
				s.heardThrough(now().Add(-50 * time.Millisecond))
			}
			if _, ok, _ := s.Find(token); !ok {
				t.Fatalf("%s not found", token)
			}
		}
		return db.finds - f0
	}

	s.listeningFrom(now())
	_ = s.Commit("a", []byte("v"), expiry)
	if n := reads("a", 5*time.Second, true); n != 0 {
		t.Fatalf("announced copy, every end heard: %d reads in 5 s, want 0", n)
	}
	// Ended elsewhere: the announcement drops it at once.
	delete(db.data, "a")
	s.ended([]string{"a"})
	if _, ok, _ := s.Find("a"); ok {
		t.Fatal("announced end still accepted")
	}
	// The proof ages (heartbeats not heard): read again every fresh.
	_ = s.Commit("b", []byte("v"), expiry)
	if n := reads("b", 3*time.Second, false); n < 2 {
		t.Fatalf("proof older than fresh: %d reads in 3 s, want one a second", n)
	}
	// Past the trusted cap, read again even with every end heard.
	step(time.Second)
	_, _, _ = s.Find("b")
	if n := reads("b", sessionTrusted+time.Second, true); n != 1 {
		t.Fatalf("%d reads over %v, want 1 (the cap)", n, sessionTrusted+time.Second)
	}
	// An end announced while the read was in flight: that copy may
	// predate it, so it is trusted for fresh only.
	_ = db.Commit("c", []byte("v"), expiry) // written elsewhere, not cached here
	s.heardThrough(now())
	db.during = func() { s.ended([]string{"other"}) }
	_, _, _ = s.Find("c")
	if n := reads("c", 3*time.Second, true); n != 1 {
		t.Fatalf("copy read while an end was applied: %d reads in 3 s, want 1 (after fresh)", n)
	}
	// Nobody listening: copies are read every fresh.
	s.stopListening()
	if n := reads("c", 3*time.Second, false); n < 2 {
		t.Fatalf("not listening: %d reads in 3 s, want one a second", n)
	}
	// Listening again: a copy from before is not trusted until read again
	// (ends committed meanwhile were not heard); the read one is.
	_ = s.Commit("d", []byte("v"), expiry)
	step(10 * time.Millisecond)
	s.listeningFrom(now())
	if n := reads("d", 1500*time.Millisecond, true); n != 1 {
		t.Fatalf("copy from before listening: %d reads in 1.5 s, want 1", n)
	}
	if n := reads("d", 3*time.Second, true); n != 0 {
		t.Fatalf("copy read while listening: %d reads in 3 s, want 0", n)
	}
	// Never past the stored expiry, however well told.
	_ = s.Commit("e", []byte("v"), now().Add(300*time.Millisecond))
	step(400 * time.Millisecond)
	s.heardThrough(now())
	if _, ok, _ := s.Find("e"); ok {
		t.Fatal("expired session served from an announced copy")
	}
	t.Logf("announced copies: 0 reads in 5 s while heard; re-read each %v when the proof ages, the listener is away or an end raced the read; at most every %v otherwise",
		s.fresh, sessionTrusted)
}

// TestSessionSavedOnlyWhenChanged: a request that leaves the session as it
// was loaded neither encodes nor writes it nor sets the cookie again
// (within the store's touch window), while one that changes it (Put, Pop)
// is saved as before, for this process and in Postgres.
func TestSessionSavedOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	s := serveApp(t, newTestServer(t, nil).app, options{})
	tn := testenv.NewTenant(t, s.app, 1)
	token := s.as(tn.Org, tn.Buyers[0]).cookie()
	handler := func(srv *Server) http.Handler {
		return srv.withSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/put":
				srv.sessions.Put(r.Context(), "note", "hello")
			case "/pop":
				_, _ = io.WriteString(w, srv.sessions.PopString(r.Context(), "note"))
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
	}
	h := handler(s.srv)
	do := func(h http.Handler, path string) (setCookie bool, body string) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Cookie", s.srv.sessions.Cookie.Name+"="+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Header().Get("Set-Cookie") != "", rec.Body.String()
	}
	do(h, "/") // the first request of this process may refresh the expiry
	c0 := s.srv.sstore.dbCommits.Load()
	for range 5 {
		if set, _ := do(h, "/"); set {
			t.Fatal("an unchanged session set the cookie again")
		}
	}
	if n := s.srv.sstore.dbCommits.Load() - c0; n != 0 {
		t.Fatalf("an unchanged session was written %d times", n)
	}
	if set, _ := do(h, "/put"); !set {
		t.Fatal("a changed session did not set the cookie")
	}
	if set, body := do(h, "/pop"); !set || body != "hello" {
		t.Fatalf("pop: cookie set %v, body %q; want the value put, saved", set, body)
	}
	if _, body := do(h, "/pop"); body != "" {
		t.Fatalf("second pop found %q: the first pop was not saved", body)
	}
	// And Postgres has the same: a process without the cache reads it there.
	other := serveApp(t, s.app, options{noSessionCache: true})
	do(handler(other.srv), "/put")
	if _, body := do(handler(other.srv), "/pop"); body != "hello" {
		t.Fatalf("pop through Postgres: %q, want hello", body)
	}
}

package session

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/hold"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/httpx"
)

// recordingHub is the live hub's part Sessions calls, remembering which
// sessions it was told to close.
type recordingHub struct {
	mu     sync.Mutex
	closed []string
}

func (h *recordingHub) CloseSession(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = append(h.closed, token)
}

func (h *recordingHub) RecheckSessions() {}

func (h *recordingHub) wasClosed(token string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.closed, token)
}

// process is one seatd process's sessions on a shared app (Postgres),
// serving a few routes through Load:
//
//	POST /login   signs in as a buyer of a new organization
//	POST /logout  signs out
//	GET  /me      200 with an actor, 401 without (as a guarded route)
//	GET  /put     changes the session (a flash), 204
//	GET  /pop     answers the flash and takes it out
//	GET  /        leaves the session as it is, 204
type process struct {
	t        testing.TB
	sessions *Sessions
	hub      *recordingHub
	ts       *httptest.Server
}

func newProcess(t testing.TB, a *app.App, noCache bool) *process {
	t.Helper()
	return newProcessWith(t, a, noCache, nil)
}

// newProcessWith is newProcess with its options changed by opt first.
// Its POST /login?created=<Unix seconds> signs in an account made then,
// and GET /cap answers the actor's hold cap.
func newProcessWith(t testing.TB, a *app.App, noCache bool, opt func(*Options)) *process {
	t.Helper()
	hub := &recordingHub{}
	errs := httpx.NewErrors(a.Log)
	// A notifier of the process's own, as each seatd process has.
	o := Options{Pool: a.Pool, Store: a.Store.Accounts, Devices: a.Store.Devices, Notifier: testenv.Notifier(t, a), Hub: hub, Errors: errs,
		Log: a.Log, Lifetime: a.Cfg.SessionLifetime, IdleTimeout: a.Cfg.SessionIdleTimeout, NoCache: noCache}
	if opt != nil {
		opt(&o)
	}
	s := New(o)
	testenv.Run(t, s) // stopped before its notifier and the app
	g := Guards{Errors: errs}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", g.Public(func(w http.ResponseWriter, r *http.Request) error {
		acct := Account{Org: uuid.New(), OrgSlug: "org", OrgName: "Org", User: uuid.New(), Email: "buyer@x.example", Role: hold.RoleBuyer}
		if c, err := strconv.ParseInt(r.URL.Query().Get("created"), 10, 64); err == nil {
			acct.CreatedAt = time.Unix(c, 0)
		}
		return s.SignIn(w, r, acct)
	}))
	mux.HandleFunc("GET /cap", g.Authed(AnyRole, func(w http.ResponseWriter, _ *http.Request, a hold.Actor) error {
		_, err := io.WriteString(w, strconv.Itoa(a.HoldCap))
		return err
	}))
	mux.HandleFunc("POST /logout", g.Public(func(w http.ResponseWriter, r *http.Request) error {
		return s.SignOut(w, r)
	}))
	mux.HandleFunc("GET /me", g.Authed(AnyRole, func(w http.ResponseWriter, _ *http.Request, _ hold.Actor) error {
		w.WriteHeader(http.StatusOK)
		return nil
	}))
	mux.HandleFunc("GET /put", func(w http.ResponseWriter, r *http.Request) {
		s.Flash(r.Context(), "hello")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /pop", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, s.PopFlash(r.Context()))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ts := httptest.NewServer(s.Load(mux))
	t.Cleanup(ts.Close)
	return &process{t: t, sessions: s, hub: hub, ts: ts}
}

// do sends a request with the session token (none if "") and returns the
// status, whether the answer set the cookie, and the body.
func (p *process) do(method, path, token string) (status int, setCookie bool, body string) {
	p.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, p.ts.URL+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.AddCookie(&http.Cookie{Name: p.sessions.CookieName(), Value: token})
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Set-Cookie") != "", string(b)
}

// login signs in and returns the session token.
func (p *process) login() string {
	p.t.Helper()
	return p.loginAs("")
}

// loginAs signs in with the query given (created=…) and returns the
// session token.
func (p *process) loginAs(query string) string {
	p.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", p.ts.URL+"/login?"+query, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	_ = res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == p.sessions.CookieName() && c.Value != "" {
			return c.Value
		}
	}
	p.t.Fatalf("login: %d, no session cookie", res.StatusCode)
	return ""
}

// TestSessionLogoutElsewhere: another process serves a cached token
// without asking Postgres while it hears every announced end, and a token
// logged out on one process is refused there at once and by the other
// process within the cache's freshness.
func TestSessionLogoutElsewhere(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	x, y := newProcess(t, a, false), newProcess(t, a, false) // each its own session cache
	token := x.login()
	if st, _, _ := y.do("GET", "/me", token); st != http.StatusOK { // cached on y now
		t.Fatalf("me on y: %d", st)
	}
	told := func() bool {
		st := y.sessions.store
		st.mu.Lock()
		defer st.mu.Unlock()
		e := st.entries[storedToken(token)]
		return e != nil && st.told(storedToken(token), e, st.now())
	}
	testsvc.Eventually(t, 3*time.Second, "y trusts its copy on announcements", func() bool {
		if st, _, _ := y.do("GET", "/me", token); st != http.StatusOK {
			t.Fatalf("me on y: %d", st)
		}
		return told()
	})
	f0 := y.sessions.Stats().Finds
	// Not a wait for a condition: requests spread over longer than the
	// cache's freshness (sessionFresh), every 100 ms.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if st, _, _ := y.do("GET", "/me", token); st != http.StatusOK {
			t.Fatalf("me on y: %d", st)
		}
	}
	if n := y.sessions.Stats().Finds - f0; n != 0 {
		t.Fatalf("y read the session %d times in 1.5 s while hearing every end, want 0", n)
	}

	if st, _, _ := x.do("POST", "/logout", token); st != http.StatusOK {
		t.Fatalf("logout: %d", st)
	}
	out := time.Now()
	if st, _, _ := x.do("GET", "/me", token); st != http.StatusUnauthorized {
		t.Fatalf("me on x after logout: %d, want 401", st)
	}
	testsvc.Eventually(t, 2*time.Second, "the token refused by the other process", func() bool {
		st, _, _ := y.do("GET", "/me", token)
		return st == http.StatusUnauthorized
	})
	t.Logf("logout refused at once on its own process; the other process refused the token after %s (bound %s)",
		time.Since(out).Round(time.Millisecond), sessionFresh)
}

// TestSessionDataChangedElsewhere: a change of a session's data on one
// process (a flash message) makes the other process drop its cached
// copy, without closing the session's sockets there.
func TestSessionDataChangedElsewhere(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	x, y := newProcess(t, a, false), newProcess(t, a, false)
	token := x.login()
	if st, _, _ := y.do("GET", "/me", token); st != http.StatusOK { // cached on y now
		t.Fatalf("me on y: %d", st)
	}
	stored := storedToken(token)
	// The change is announced once; y hears it only if its listener is
	// up, which a copy it trusts on announcements shows.
	testsvc.Eventually(t, 3*time.Second, "y listens for announcements", func() bool {
		if st, _, _ := y.do("GET", "/me", token); st != http.StatusOK {
			t.Fatalf("me on y: %d", st)
		}
		st := y.sessions.store
		st.mu.Lock()
		defer st.mu.Unlock()
		e := st.entries[stored]
		return e != nil && st.told(stored, e, st.now())
	})
	x.do("GET", "/put", token)
	testsvc.Eventually(t, 2*time.Second, "y drops its cached copy", func() bool {
		st := y.sessions.store
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.entries[stored] == nil
	})
	if y.hub.wasClosed(stored) {
		t.Fatal("a change of the session's data closed its sockets")
	}
	if _, _, body := y.do("GET", "/pop", token); body != "hello" {
		t.Fatalf("y shows the flash set on x as %q, want hello", body)
	}
}

// TestSessionSavedOnlyWhenChanged: a request that leaves the session as it
// was loaded neither encodes nor writes it nor sets the cookie again
// (within the store's touch window), while one that changes it (Put, Pop)
// is saved as before, for this process and in Postgres.
func TestSessionSavedOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	s := newProcess(t, a, false)
	token := s.login()
	s.do("GET", "/", token) // the first request of this process may refresh the expiry
	c0 := s.sessions.Stats().Commits
	for range 5 {
		if _, set, _ := s.do("GET", "/", token); set {
			t.Fatal("an unchanged session set the cookie again")
		}
	}
	if n := s.sessions.Stats().Commits - c0; n != 0 {
		t.Fatalf("an unchanged session was written %d times", n)
	}
	if _, set, _ := s.do("GET", "/put", token); !set {
		t.Fatal("a changed session did not set the cookie")
	}
	if _, set, body := s.do("GET", "/pop", token); !set || body != "hello" {
		t.Fatalf("pop: cookie set %v, body %q; want the value put, saved", set, body)
	}
	if _, _, body := s.do("GET", "/pop", token); body != "" {
		t.Fatalf("second pop found %q: the first pop was not saved", body)
	}
	// And Postgres has the same: a process without the cache reads it there.
	other := newProcess(t, a, true)
	other.do("GET", "/put", token)
	if _, _, body := other.do("GET", "/pop", token); body != "hello" {
		t.Fatalf("pop through Postgres: %q, want hello", body)
	}
}

// TestNewAccountAgeOnEachRequest: whether a session's account is new
// (its holds capped at NewAccountHoldCap) follows the age setting in
// force, not the one of its sign-in: a process started with another
// SEATD_NEW_ACCOUNT_AGE applies it to the sessions signed in before, both
// ways. A session signed in before the account's creation was kept
// carries the end of its newness, and keeps its cap until then.
func TestNewAccountAgeOnEachRequest(t *testing.T) {
	a := testenv.App(t, nil)
	withAge := func(age time.Duration) *process {
		return newProcessWith(t, a, true, func(o *Options) { o.NewAccountAge, o.NewAccountHoldCap = age, 2 })
	}
	hourAge, dayAge := withAge(time.Hour), withAge(24*time.Hour)
	capOf := func(p *process, token string) string {
		t.Helper()
		status, _, body := p.do("GET", "/cap", token)
		if status != http.StatusOK {
			t.Fatalf("GET /cap: %d", status)
		}
		return body
	}
	now := time.Now()
	twoHours := hourAge.loginAs("created=" + strconv.FormatInt(now.Add(-2*time.Hour).Unix(), 10))
	halfHour := dayAge.loginAs("created=" + strconv.FormatInt(now.Add(-30*time.Minute).Unix(), 10))
	for _, c := range []struct {
		name  string
		p     *process
		token string
		want  string
	}{
		{"2 h old, signed in under 1 h, read under 1 h", hourAge, twoHours, "0"},
		{"2 h old, signed in under 1 h, read under 24 h", dayAge, twoHours, "2"},
		{"30 min old, signed in under 24 h, read under 24 h", dayAge, halfHour, "2"},
		{"30 min old, signed in under 24 h, read under 1 h", hourAge, halfHour, "2"},
		{"30 min old, signed in under 24 h, read under 10 min", withAge(10 * time.Minute), halfHour, "0"},
	} {
		if got := capOf(c.p, c.token); got != c.want {
			t.Errorf("%s: hold cap %s, want %s", c.name, got, c.want)
		}
	}

	// A session from before: only new_until, as sign-in wrote it then.
	legacy := func(until time.Time) string {
		token := hourAge.login() // an account without a creation time
		ctx, err := hourAge.sessions.sm.Load(context.Background(), token)
		if err != nil {
			t.Fatal(err)
		}
		hourAge.sessions.sm.Put(ctx, sessNewUntil, strconv.FormatInt(until.Unix(), 10))
		if _, _, err := hourAge.sessions.sm.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return token
	}
	if got := capOf(dayAge, legacy(now.Add(time.Hour))); got != "2" {
		t.Errorf("a session from before, new for another hour: hold cap %s, want 2", got)
	}
	if got := capOf(dayAge, legacy(now.Add(-time.Minute))); got != "0" {
		t.Errorf("a session from before, new until a minute ago: hold cap %s, want 0", got)
	}
}

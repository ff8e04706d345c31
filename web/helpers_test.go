package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/httpx"
)

// testServer is the web layer on a real app (Postgres, Redis) behind an
// httptest.Server.
type testServer struct {
	t   testing.TB
	app *app.App
	srv *Server
	ts  *httptest.Server
}

// newTestServer builds an app (mod adjusts its config after the test
// defaults: generous rate limits, a small pool) and serves it.
func newTestServer(t testing.TB, mod func(*config.Config)) *testServer {
	t.Helper()
	a := testenv.App(t, func(c *config.Config) {
		c.PGMaxConns = 8
		generousLimits(c)
		if mod != nil {
			mod(c)
		}
	})
	return serveApp(t, a, options{})
}

// ownQueues gives a test's app a database of its own, for tests that
// wait for mail: their mail is then not queued behind the bookings the
// package's other tests make, whose confirmations (a PDF and a QR code a
// ticket) render at about 0.4 s each with -race: a hundred of them queued
// ahead outlast the test's wait.
func ownQueues(t *testing.T) func(*config.Config) {
	db := testsvc.OwnDatabase(t, t.Name())
	return func(c *config.Config) { c.DatabaseURL = db }
}

// generousLimits lifts the per-minute limits out of a test's way. The
// counts of every server live in the one test Redis, and every test's
// client is 127.0.0.1: a server with the default limits would refuse
// what other tests counted. A test of a limit sets it lower after this.
func generousLimits(c *config.Config) {
	c.HoldRatePerMinute = 100_000
	c.LoginRatePerMinute = 100_000
	c.UpgradeRatePerMinute = 100_000
	c.ReadRatePerMinute, c.ReadPrefixRatePerMinute = 100_000, 100_000
	c.SignupRatePerMinute, c.NewSessionRatePerMinute = 100_000, 100_000
}

// serveApp serves another web server on an existing app (a second
// "process" sharing the databases).
func serveApp(t testing.TB, a *app.App, o options) *testServer {
	t.Helper()
	d := depsOf(a)
	// A notifier of the server's own: a test may run the app's loops
	// (with its notifier) or not, and may serve two servers on one app.
	d.Notifier = testenv.Notifier(t, a)
	s := newServer(d, o)
	testenv.Run(t, s) // stopped before its notifier and the app
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &testServer{t: t, app: a, srv: s, ts: ts}
}

// depsOf takes the web layer's dependencies from an app, as cmd/seatd does.
func depsOf(a *app.App) Deps {
	return Deps{Cfg: a.Cfg, Log: a.Log, Pool: a.Pool, Redis: a.Redis, Store: a.Store,
		Engine: a.Engine, Holds: a.Holds, BoxOffice: a.BoxOffice, Events: a.Events, Waitlist: a.Waitlist, Monitor: a.Monitor,
		Accounts: a.Accounts, Notifier: a.Notifier, Registry: a.Registry,
		Door: a.Door, Tickets: a.TicketKeys, Details: a.BookingDetails,
		Payments: a.Payments, TestPayments: a.TestPayments}
}

// client is one browser-like user agent: its own cookie jar, no redirects
// followed.
type client struct {
	t    testing.TB
	base string
	hc   *http.Client
	hdr  []string // sent with every request (an API key)
}

func (s *testServer) client() *client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return &client{t: s.t, base: s.ts.URL, hc: &http.Client{
		Jar:           jar,
		Transport:     openAPICheck{t: s.t, next: http.DefaultTransport},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// as returns a client signed in as u of org.
func (s *testServer) as(org store.Org, u store.User) *client {
	s.t.Helper()
	c := s.client()
	c.login(org.Slug, u.Email, testenv.Password)
	return c
}

// keyOf creates an API key in role through organizer's session and
// returns its id and secret.
func keyOf(t testing.TB, organizer *client, role string) (uuid.UUID, string) {
	t.Helper()
	var k struct {
		ID  uuid.UUID `json:"id"`
		Key string    `json:"key"`
	}
	organizer.do("POST", "/api/v1/api-keys", map[string]string{"name": role + " key", "role": role}).
		want(t, http.StatusCreated).json(t, &k)
	return k.ID, k.Key
}

// withKey returns a client (no cookies) that sends secret as its bearer
// key.
func (s *testServer) withKey(secret string) *client {
	c := s.client()
	c.hdr = []string{"Authorization", "Bearer " + secret}
	return c
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// raw is a request body sent as is, with its own Content-Type (if any).
type raw struct {
	contentType string
	body        []byte
}

// do sends a request. body: nil (none), raw, or any value sent as JSON.
// hdr is a list of header name, value pairs.
func (c *client) do(method, path string, body any, hdr ...string) response {
	c.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case raw:
		rd, ct = bytes.NewReader(b.body), b.contentType
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd, ct = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	hdr = append(append([]string(nil), c.hdr...), hdr...)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (c *client) login(org, email, password string) response {
	c.t.Helper()
	r := c.do("POST", "/login", map[string]string{"org": org, "email": email, "password": password})
	if r.status != http.StatusOK {
		c.t.Fatalf("login %s/%s: %d %s", org, email, r.status, r.body)
	}
	return r
}

// cookie returns the session token the client holds ("" if none).
func (c *client) cookie() string {
	u, _ := url.Parse(c.base)
	for _, k := range c.hc.Jar.Cookies(u) {
		if strings.HasSuffix(k.Name, "seatd_session") {
			return k.Value
		}
	}
	return ""
}

// json decodes the body into v.
func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

// errBody decodes an error answer, failing unless it has the error shape.
func (r response) errBody(t testing.TB) httpx.ErrorBody {
	t.Helper()
	var e httpx.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == "" || e.Message == "" {
		t.Fatalf("status %d: not a JSON error with error and message: %q", r.status, r.body)
	}
	return e
}

func (r response) want(t testing.TB, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r
}

// wantErr checks an error answer's status and code.
func (r response) wantErr(t testing.TB, status int, code string) httpx.ErrorBody {
	t.Helper()
	r.want(t, status)
	e := r.errBody(t)
	if string(e.Error) != code {
		t.Fatalf("error %q, want %q: %s", e.Error, code, r.body)
	}
	return e
}

// holdOf is a hold answer.
type holdOf struct {
	ID        uuid.UUID  `json:"id"`
	SeatID    uuid.UUID  `json:"seat_id"`
	EventID   uuid.UUID  `json:"event_id"`
	UserID    *uuid.UUID `json:"user_id"`
	HeldUntil string     `json:"held_until"`
	Status    string     `json:"status"`
}

// actor is the hold.Actor of a user.
func actor(u store.User) hold.Actor {
	return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.Role(u.Role)}
}

// coreHold holds seats through the core directly (test setup).
func coreHold(t testing.TB, a *app.App, u store.User, event uuid.UUID, seats ...uuid.UUID) []store.Hold {
	t.Helper()
	res, err := a.Holds.Hold(context.Background(), actor(u), hold.Request{Event: event, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatalf("core hold: %v", err)
	}
	return res.Holds
}

// orgRows counts rows of table for an organization; state is a digest of
// an org's seats and holds, to show nothing changed.
func orgRows(t testing.TB, a *app.App, table string, org uuid.UUID) int {
	t.Helper()
	var n int
	q := map[string]string{
		"seat_holds":       `SELECT count(*) FROM seat_holds WHERE org_id = $1`,
		"users":            `SELECT count(*) FROM users WHERE org_id = $1`,
		"bookings":         `SELECT count(*) FROM bookings WHERE org_id = $1`,
		"tickets":          `SELECT count(*) FROM tickets WHERE org_id = $1`,
		"events":           `SELECT count(*) FROM events WHERE org_id = $1`,
		"waitlist_entries": `SELECT count(*) FROM waitlist_entries WHERE org_id = $1`,
	}[table]
	if err := a.Pool.QueryRow(context.Background(), q, org).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func orgState(t testing.TB, a *app.App, org uuid.UUID) string {
	t.Helper()
	var s string
	err := a.Pool.QueryRow(context.Background(), `
		SELECT coalesce((SELECT string_agg(id::text || status || version || coalesce(hold_id::text, ''), ',' ORDER BY id)
		                 FROM seats WHERE org_id = $1), '') || '|' ||
		       coalesce((SELECT string_agg(id::text || status || held_until::text || extensions, ',' ORDER BY id)
		                 FROM seat_holds WHERE org_id = $1), '') || '|' ||
		       (SELECT count(*) FROM bookings WHERE org_id = $1) || '|' ||
		       (SELECT count(*) FROM users WHERE org_id = $1)`, org).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// customerHold holds seats for a customer for a day, as staff u.
func customerHold(t testing.TB, a *app.App, u store.User, event uuid.UUID, seats ...uuid.UUID) []store.Hold {
	t.Helper()
	res, err := a.Holds.Hold(context.Background(), actor(u), hold.Request{Event: event, Seats: seats,
		Customer: &store.Customer{Name: "Ada Lovelace", Email: "ada@example.com"}, Until: time.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatalf("customer hold: %v", err)
	}
	return res.Holds
}

// sale holds seats for a customer and sells them, as staff u.
func sale(t testing.TB, a *app.App, u store.User, event uuid.UUID, seats ...uuid.UUID) store.Booking {
	t.Helper()
	hs := customerHold(t, a, u, event, seats...)
	ids := make([]uuid.UUID, len(hs))
	for i, h := range hs {
		ids[i] = h.ID
	}
	b, err := a.BoxOffice.Sell(context.Background(), actor(u), event, uuid.NewString(), ids, "card")
	if err != nil {
		t.Fatalf("sell: %v", err)
	}
	return b
}

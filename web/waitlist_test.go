package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

type waitlistOf struct {
	ID         uuid.UUID `json:"id"`
	Position   int       `json:"position"`
	Status     string    `json:"status"`
	Section    string    `json:"section"`
	Accessible bool      `json:"accessible"`
	HoldIDs    []string  `json:"hold_ids"`
	Offer      string    `json:"offer"`
}

// TestWaitlistAPI: join (201 with a position), list, a freed seat offered
// live to the first in line (the seat and the cart entry with its note on
// the buyer's socket), the offer bought (its panel pushed to that socket
// too), the staff view, leave; malformed bodies are 422
// with fields and write nothing; another org gets 404.
func TestWaitlistAPI(t *testing.T) {
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 3), testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	h := coreHold(t, a, tn.Buyers[0], ev.ID, seat)[0]
	path := "/api/v1/events/" + ev.ID.String() + "/waitlist"
	first, second := s.as(tn.Org, tn.Buyers[1]), s.as(tn.Org, tn.Buyers[2])

	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "count"},
		{map[string]any{"count": 0}, "count"},
		{map[string]any{"count": 101}, "count"},
		{map[string]any{"count": "two"}, "count"},
		{map[string]any{"count": 1, "section": "Z"}, "section"},
		{map[string]any{"count": 1, "category": "gold"}, "category"},
		{map[string]any{"count": 1, "accessible": "yes"}, "accessible"},
	} {
		e := first.do("POST", path, c.body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if e.Fields[c.field] == "" {
			t.Fatalf("%v: fields %v, want %s", c.body, e.Fields, c.field)
		}
	}
	if n := orgRows(t, a, "waitlist_entries", tn.Org.ID); n != 0 {
		t.Fatalf("%d entries written by refused requests", n)
	}
	s.as(other.Org, other.Buyers[0]).do("POST", path, map[string]any{"count": 1}).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.BoxOffice).do("POST", path, map[string]any{"count": 1}).want(t, http.StatusForbidden)

	// The map's place-in-line panel never polls (places are pushed on the
	// live socket); a buyer in line fetches it again after a reconnect.
	status := "/e/" + ev.ID.String() + "/waitlist"
	panel := func(c *client) string {
		t.Helper()
		p := string(c.do("GET", status, nil).want(t, http.StatusOK).body)
		if strings.Contains(p, "every ") || strings.Count(p, "hx-trigger=") != 1 {
			t.Fatalf("the waitlist panel polls: %s", p)
		}
		return p
	}
	if p := panel(first); strings.Contains(p, "data-resync") || !strings.Contains(p, `hx-trigger="resync"`) {
		t.Fatalf("panel of a buyer not in line: %s", p)
	}
	var e1, e2 waitlistOf
	first.do("POST", path, map[string]any{"count": 1, "section": "A"}).want(t, http.StatusCreated).json(t, &e1)
	if p := panel(first); !strings.Contains(p, "data-resync") || !strings.Contains(p, `hx-trigger="resync"`) {
		t.Fatalf("panel of a buyer in line is not fetched again after a reconnect: %s", p)
	}
	second.do("POST", path, map[string]any{"count": 1, "accessible": true}).want(t, http.StatusCreated).json(t, &e2)
	if e1.Position != 1 || e2.Position != 2 || e1.Section != "A" || e1.Accessible || !e2.Accessible {
		t.Fatalf("entries %+v %+v, want positions 1 and 2, the second asking for accessible seating", e1, e2)
	}
	if p := panel(second); !strings.Contains(p, "accessible seating") {
		t.Fatalf("panel of a buyer waiting for accessible seating does not say so: %s", p)
	}
	first.do("POST", path, map[string]any{"count": 1}).wantErr(t, http.StatusConflict, "conflict")
	s.as(other.Org, other.Buyers[0]).do("DELETE", "/api/v1/waitlist/"+e1.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	second.do("DELETE", "/api/v1/waitlist/"+e1.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(other.Org, other.Organizer).do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	var line struct {
		Waiting int          `json:"waiting"`
		First   []waitlistOf `json:"first"`
	}
	s.as(tn.Org, tn.Organizer).do("GET", path, nil).want(t, http.StatusOK).json(t, &line)
	if line.Waiting != 2 || len(line.First) != 2 || line.First[0].ID != e1.ID {
		t.Fatalf("staff view %+v", line)
	}
	if r := s.as(tn.Org, tn.Organizer).do("GET", "/admin/events/"+ev.ID.String()+"/waitlist", nil).want(t, http.StatusOK); !strings.Contains(string(r.body), `data-testid="waitlist-waiting">2<`) {
		t.Fatalf("dashboard waitlist panel: %s", r.body)
	}

	conn, _, err := s.socket(t, first, ev.ID, s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Release(context.Background(), actor(tn.Buyers[0]), h.ID, ""); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for the offer in the cart: %v", err)
		}
		if strings.Contains(string(msg), `id="cart-`+seat.String()+`"`) && strings.Contains(string(msg), `data-testid="offer-note"`) {
			break
		}
	}
	// The offer's panel fetches itself once more, when the offer lapses.
	if p := panel(first); !regexp.MustCompile(`hx-trigger="resync, load delay:(\d+)s"`).MatchString(p) {
		t.Fatalf("panel with an offer: %s", p)
	}
	var mine struct {
		Entries []waitlistOf `json:"entries"`
	}
	first.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 1 || mine.Entries[0].Status != "offered" || mine.Entries[0].Offer != "held" || len(mine.Entries[0].HoldIDs) != 1 {
		t.Fatalf("mine after the offer: %+v", mine)
	}
	// Paid for, the offer shows as bought, in the API and on the panel,
	// which no longer waits for the offer's time to run out.
	first.do("POST", "/api/v1/events/"+ev.ID.String()+"/purchase", map[string]any{"hold_ids": mine.Entries[0].HoldIDs},
		"Idempotency-Key", "offer-"+e1.ID.String()).want(t, http.StatusCreated)
	first.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 1 || mine.Entries[0].Status != "offered" || mine.Entries[0].Offer != "bought" {
		t.Fatalf("mine after paying for the offer: %+v", mine)
	}
	if p := panel(first); !strings.Contains(p, `data-status="bought"`) || strings.Contains(p, "in your cart") ||
		!strings.Contains(p, `hx-trigger="resync"`) {
		t.Fatalf("panel after paying for the offer: %s", p)
	}
	// A map open in another tab gets the bought panel pushed.
	waitPanel(t, conn, "bought, on the map's socket", func(p string) bool {
		return strings.Contains(p, `data-status="bought"`) && !strings.Contains(p, "in your cart")
	}, e2.ID)
	second.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 1 || mine.Entries[0].Position != 1 {
		t.Fatalf("second in line after the offer: %+v", mine)
	}
	second.do("DELETE", "/api/v1/waitlist/"+e2.ID.String(), nil).want(t, http.StatusNoContent)
	second.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 0 {
		t.Fatalf("entries after leaving: %+v", mine)
	}
}

// waitPanel reads frames until one carries a waitlist panel for which ok
// holds, and returns it. No panel it reads may name the entry foreign
// (another buyer's).
func waitPanel(t *testing.T, conn *websocket.Conn, what string, ok func(string) bool, foreign uuid.UUID) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for a panel %s: %v", what, err)
		}
		p := string(msg)
		if !strings.Contains(p, `id="waitlist-status"`) {
			continue
		}
		if strings.Contains(p, foreign.String()) {
			t.Fatalf("a panel with another buyer's entry: %s", p)
		}
		if ok(p) {
			return p
		}
	}
}

// TestWaitlistPushedPlace: the place in line is pushed, never asked for.
// Two buyers wait; when the first leaves, or is offered seats, the
// second's sockets — on the process that made the change and on another —
// get their panel showing #1, and the first's socket gets theirs (empty,
// or the offer); a buyer with no entry gets no panel. On Redis, and with
// Redis down on the Postgres NOTIFY path.
func TestWaitlistPushedPlace(t *testing.T) {
	t.Parallel() // every subtest has a Redis of its own
	for _, bus := range []struct {
		name      string
		redisDown bool
	}{{"redis", false}, {"postgres only", true}} {
		for _, change := range []string{"leave", "offer"} {
			t.Run(bus.name+"/"+change, func(t *testing.T) {
				r := testsvc.StartRedis(t)
				mod := func(c *config.Config) {
					c.RedisURL = r.URL()
					c.BreakerOpenFor = 200 * time.Millisecond
					c.RedisTimeout = 100 * time.Millisecond
					c.RedisDialTimeout = 100 * time.Millisecond
				}
				pa, pb := newTestServer(t, mod), newTestServer(t, mod)
				testenv.Background(t, pa.app)
				testenv.Background(t, pb.app)
				tn := testenv.NewTenant(t, pa.app, 4)
				ev := testenv.NewEvent(t, pa.app, tn.Org.ID, 1, 1, 2)
				seats := testenv.SeatIDs(t, pa.app, tn.Org.ID, ev.ID)
				// Sold out: nothing to offer until the change.
				held := coreHold(t, pa.app, tn.Buyers[0], ev.ID, seats...)
				api := "/api/v1/events/" + ev.ID.String() + "/waitlist"
				first := pa.as(tn.Org, tn.Buyers[1])
				var e1, e2 waitlistOf
				first.do("POST", api, map[string]any{"count": 1}).want(t, http.StatusCreated).json(t, &e1)
				pa.as(tn.Org, tn.Buyers[2]).do("POST", api, map[string]any{"count": 1}).want(t, http.StatusCreated).json(t, &e2)
				if e1.Position != 1 || e2.Position != 2 {
					t.Fatalf("positions %d, %d", e1.Position, e2.Position)
				}
				open := func(s *testServer, c *client) *websocket.Conn {
					t.Helper()
					conn, _, err := s.socket(t, c, ev.ID, s.ts.URL)
					if err != nil {
						t.Fatal(err)
					}
					return conn
				}
				firstA := open(pa, first)
				secondA := open(pa, pa.as(tn.Org, tn.Buyers[2]))
				secondB := open(pb, pb.as(tn.Org, tn.Buyers[2]))
				thirdB := open(pb, pb.as(tn.Org, tn.Buyers[3]))
				if bus.redisDown {
					// Process B's Redis subscription is gone with Redis: the
					// change can reach it only through Postgres NOTIFY, which
					// process A publishes to when its breaker is open or its
					// Redis publish fails.
					r.Stop()
				}

				ctx := context.Background()
				switch change {
				case "leave":
					first.do("DELETE", "/api/v1/waitlist/"+e1.ID.String(), nil).want(t, http.StatusNoContent)
				case "offer":
					// The offer worker (either process's) offers the freed seat.
					if _, err := pa.app.Holds.Release(ctx, actor(tn.Buyers[0]), held[0].ID, ""); err != nil {
						t.Fatal(err)
					}
				}
				for _, conn := range []*websocket.Conn{secondB, secondA} {
					waitPanel(t, conn, "at #1", func(p string) bool {
						return strings.Contains(p, `data-testid="waitlist-position">#1<`) && strings.Contains(p, e2.ID.String())
					}, e1.ID)
				}
				waitPanel(t, firstA, "for the first buyer's change", func(p string) bool {
					if change == "leave" {
						return !strings.Contains(p, "waitlist-entry")
					}
					return strings.Contains(p, `data-status="offered"`)
				}, e2.ID)

				// The third buyer's socket, on the process where the second
				// got their panel, gets no panel: it reads up to a seat change
				// made after that panel was sent (frames keep their order).
				if _, err := pa.app.Holds.Checkout(ctx, actor(tn.Buyers[0]), ev.ID); err != nil {
					t.Fatal(err)
				}
				_ = thirdB.SetReadDeadline(time.Now().Add(10 * time.Second))
				for {
					_, msg, err := thirdB.ReadMessage()
					if err != nil {
						t.Fatalf("waiting for the seat change on the third buyer's socket: %v", err)
					}
					if strings.Contains(string(msg), "waitlist-status") {
						t.Fatalf("a buyer with no entry got a waitlist panel: %s", msg)
					}
					if strings.Contains(string(msg), `id="seat-`+seats[1].String()+`"`) {
						break
					}
				}
			})
		}
	}
}

// TestCountFieldsFollowTheLimit: the map's count fields (best seats, the
// waitlist) offer as many seats as one request may ask for, no more.
func TestCountFieldsFollowTheLimit(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.MaxSeatsPerRequest = 6 })
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 4)
	page := string(s.as(tn.Org, tn.Buyers[0]).do("GET", "/e/"+ev.ID.String(), nil).want(t, http.StatusOK).body)
	fields := regexp.MustCompile(`name="count" min="1" max="(\d+)"`).FindAllStringSubmatch(page, -1)
	if len(fields) != 2 {
		t.Fatalf("%d count fields on the map page, want 2 (best seats, waitlist)", len(fields))
	}
	for _, f := range fields {
		if f[1] != "6" {
			t.Fatalf("count field max %s, want the request limit 6", f[1])
		}
	}
}

// TestDashboardWaitlistLive: the dashboard's waitlist panel does not
// poll; its socket brings the panel again after a buyer joins the line
// and after one leaves, with the new count and the entry.
func TestDashboardWaitlistLive(t *testing.T) {
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	org := s.as(tn.Org, tn.Organizer)
	if p := string(org.do("GET", "/admin/events/"+ev.ID.String()+"/waitlist", nil).want(t, http.StatusOK).body); strings.Contains(p, "every ") ||
		!strings.Contains(p, `hx-trigger="resync"`) || !strings.Contains(p, "data-resync") {
		t.Fatalf("the dashboard's waitlist panel polls or is not fetched again on reconnect: %s", p)
	}
	dconn, _ := s.dialPath(t, org, "/live/events/"+ev.ID.String()+"/dashboard", s.ts.URL)
	if dconn == nil {
		t.Fatal("the dashboard socket did not open")
	}
	dash := frames(t, dconn)
	var e waitlistOf
	buyer := s.as(tn.Org, tn.Buyers[0])
	buyer.do("POST", "/api/v1/events/"+ev.ID.String()+"/waitlist", map[string]any{"count": 2, "section": "A"}).want(t, http.StatusCreated).json(t, &e)
	waitFrame(t, dash, 10*time.Second, "the waitlist panel with one waiting", func(f string) bool {
		return strings.Contains(f, `id="staff-waitlist"`) && strings.Contains(f, `hx-swap-oob="true"`) &&
			strings.Contains(f, `data-testid="waitlist-waiting">1<`) && strings.Contains(f, "section A")
	}, nil)
	buyer.do("DELETE", "/api/v1/waitlist/"+e.ID.String(), nil).want(t, http.StatusNoContent)
	waitFrame(t, dash, 10*time.Second, "the waitlist panel with nobody waiting", func(f string) bool {
		return strings.Contains(f, `id="staff-waitlist"`) && strings.Contains(f, `data-testid="waitlist-waiting">0<`)
	}, nil)
}

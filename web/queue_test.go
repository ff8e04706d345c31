package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/api"
)

// roomOn turns event's waiting room on through the API, opened a second
// ago, at rate (a number or "auto").
func roomOn(t *testing.T, organizer *client, event uuid.UUID, rate any) {
	t.Helper()
	organizer.do("PATCH", "/api/v1/events/"+event.String(), map[string]any{"waiting_room": map[string]any{
		"enabled": true, "opens_at": time.Now().Add(-time.Second).UTC().Format(time.RFC3339), "rate_per_minute": rate}}).
		want(t, http.StatusOK)
}

// admitAll ticks the app's admitter until c's place is admitted.
func admitAll(t *testing.T, s *testServer, c *client, event uuid.UUID) {
	t.Helper()
	testsvc.Eventually(t, 10*time.Second, "admitted", func() bool {
		if _, err := s.app.Admitter.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		var q api.QueueJSON
		c.do("GET", "/api/v1/events/"+event.String()+"/queue/mine", nil).want(t, http.StatusOK).json(t, &q)
		return q.State == "admitted"
	})
}

// setCookie puts a cookie named name with value into c's jar.
func (c *client) setCookie(name, value string) {
	u, _ := url.Parse(c.base)
	c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

func (c *client) cookieNamed(name string) string {
	u, _ := url.Parse(c.base)
	for _, k := range c.hc.Jar.Cookies(u) {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// TestQueueGate: with an event's waiting room on, a buyer's map answers
// 303 to the line and the hold routes and the live socket 429 in_queue
// with Retry-After; the line answers the buyer's place, and once the
// admitter lets them through the admission cookie opens the map and the
// holds. An admission of another session, of another event, or forged
// is refused; staff and a box-office API key pass; another organization's
// event is 404 and its line too.
func TestQueueGate(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 2), testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	ev2 := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	org := s.as(tn.Org, tn.Organizer)
	buyer, second := s.as(tn.Org, tn.Buyers[0]), s.as(tn.Org, tn.Buyers[1])
	id := ev.ID.String()

	// Without a room the map is open.
	buyer.do("GET", "/e/"+id, nil).want(t, http.StatusOK)
	roomOn(t, org, ev.ID, 6000)
	roomOn(t, org, ev2.ID, 6000)

	r := buyer.do("GET", "/e/"+id, nil).want(t, http.StatusSeeOther)
	if loc := r.header.Get("Location"); loc != "/e/"+id+"/queue" {
		t.Fatalf("map redirects to %q", loc)
	}
	for _, req := range []struct{ method, path string }{
		{"POST", "/api/v1/events/" + id + "/holds"},
		{"POST", "/e/" + id + "/seats/" + seats[0].String() + "/toggle"},
		{"POST", "/e/" + id + "/best"},
		{"GET", "/e/" + id + "/map"},
		{"GET", "/live/events/" + id},
	} {
		r := buyer.do(req.method, req.path, map[string]any{"seat_id": seats[0]}).want(t, http.StatusTooManyRequests)
		if strings.HasPrefix(req.path, "/api/") {
			r.wantErr(t, http.StatusTooManyRequests, "in_queue")
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 429 without Retry-After", req.method, req.path)
		}
	}

	// The line: one place per account, whatever the number of joins.
	var q api.QueueJSON
	buyer.do("POST", "/api/v1/events/"+id+"/queue", nil).want(t, http.StatusOK).json(t, &q)
	if q.State != "waiting" || q.Position != 1 || q.Ahead != 0 || q.Admitted || !q.WaitingRoom {
		t.Fatalf("first in line: %+v", q)
	}
	second.do("POST", "/api/v1/events/"+id+"/queue", nil).want(t, http.StatusOK)
	buyer.do("POST", "/api/v1/events/"+id+"/queue", nil).want(t, http.StatusOK).json(t, &q)
	if q.Position != 1 || q.InLine != 2 {
		t.Fatalf("joining again: %+v", q)
	}
	page := buyer.do("GET", "/e/"+id+"/queue", nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), `data-testid="queue"`) {
		t.Fatalf("queue page: %s", page.body)
	}

	// Admitted: the cookie opens the map and the holds.
	admitAll(t, s, buyer, ev.ID)
	buyer.do("POST", "/api/v1/events/"+id+"/queue", nil).want(t, http.StatusOK).json(t, &q)
	if !q.Admitted || q.MapURL != "/e/"+id {
		t.Fatalf("admitted: %+v", q)
	}
	pass := buyer.cookieNamed("seatd_queue_" + id)
	if pass == "" {
		t.Fatal("no admission cookie")
	}
	buyer.do("GET", "/e/"+id, nil).want(t, http.StatusOK)
	buyer.do("GET", "/e/"+id+"/queue", nil).want(t, http.StatusSeeOther)
	buyer.do("POST", "/api/v1/events/"+id+"/holds", map[string]any{"seat_id": seats[0]}).want(t, http.StatusCreated)

	// Borrowed, forged or misplaced admissions are refused.
	for name, c := range map[string]struct {
		cookie, value string
		who           *client
	}{
		"another session's":                {"seatd_queue_" + id, pass, second},
		"the same account's other session": {"seatd_queue_" + id, pass, s.as(tn.Org, tn.Buyers[0])},
		"forged":                           {"seatd_queue_" + id, "AAAAAGlpaWlpaWlpaWlpaWlpaWlpaWk", second},
		"another event's":                  {"seatd_queue_" + ev2.ID.String(), pass, buyer},
	} {
		c.who.setCookie(c.cookie, c.value)
		target := id
		if strings.HasSuffix(c.cookie, ev2.ID.String()) {
			target = ev2.ID.String()
		}
		c.who.do("GET", "/e/"+target, nil).want(t, http.StatusSeeOther)
		c.who.do("POST", "/api/v1/events/"+target+"/holds", map[string]any{"seat_id": seats[1]}).
			wantErr(t, http.StatusTooManyRequests, "in_queue")
		t.Logf("%s admission refused", name)
	}

	// Staff pass; so does a box-office API key.
	org.do("GET", "/e/"+id, nil).want(t, http.StatusOK)
	s.as(tn.Org, tn.BoxOffice).do("GET", "/e/"+id, nil).want(t, http.StatusOK)
	_, secret := keyOf(t, org, "box_office")
	if r := s.withKey(secret).do("POST", "/api/v1/events/"+id+"/holds", map[string]any{"seat_id": seats[2]}); r.status == http.StatusTooManyRequests {
		t.Fatalf("a box-office key was sent to the line: %s", r.body)
	}

	// Another organization: 404, as for an event that does not exist.
	stranger := s.as(other.Org, other.Buyers[0])
	stranger.do("GET", "/e/"+id, nil).want(t, http.StatusNotFound)
	stranger.do("POST", "/api/v1/events/"+id+"/queue", nil).wantErr(t, http.StatusNotFound, "not_found")
	stranger.do("GET", "/api/v1/events/"+id+"/queue/mine", nil).wantErr(t, http.StatusNotFound, "not_found")
	stranger.do("POST", "/api/v1/events/"+id+"/holds", map[string]any{"seat_id": seats[3]}).wantErr(t, http.StatusNotFound, "not_found")
}

// TestQueueAdmissionExpires: an admission lapses after SEATD_QUEUE_ADMISSION
// without use, and the map sends its bearer back to the line.
func TestQueueAdmissionExpires(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.QueueAdmission = 2 * time.Second })
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 5)
	buyer := s.as(tn.Org, tn.Buyers[0])
	roomOn(t, s.as(tn.Org, tn.Organizer), ev.ID, 6000)
	buyer.do("POST", "/api/v1/events/"+ev.ID.String()+"/queue", nil).want(t, http.StatusOK)
	admitAll(t, s, buyer, ev.ID)
	buyer.do("POST", "/api/v1/events/"+ev.ID.String()+"/queue", nil).want(t, http.StatusOK)
	issued := time.Now()
	buyer.do("GET", "/e/"+ev.ID.String(), nil).want(t, http.StatusOK)
	testsvc.Eventually(t, 5*time.Second, "the admission's lifetime passed", func() bool { return time.Since(issued) > 3*time.Second })
	buyer.do("GET", "/e/"+ev.ID.String(), nil).want(t, http.StatusSeeOther)
}

// TestQueueSettings: malformed waiting-room settings are 422 naming each
// field and change nothing; good ones read back, "auto" included.
func TestQueueSettings(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	// The follower re-reads the cached events' settings every round, as
	// in a running seatd: a settings message missed on a busy machine
	// delays the change by a round instead of losing it.
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 5)
	org := s.as(tn.Org, tn.Organizer)
	path := "/api/v1/events/" + ev.ID.String()
	for _, tc := range []struct {
		name  string
		room  map[string]any
		field string
	}{
		{"on without an opening", map[string]any{"enabled": true}, "waiting_room.opens_at"},
		{"opening not a time", map[string]any{"enabled": true, "opens_at": "at ten"}, "waiting_room.opens_at"},
		{"rate zero", map[string]any{"rate_per_minute": 0}, "waiting_room.rate_per_minute"},
		{"rate negative", map[string]any{"rate_per_minute": -5}, "waiting_room.rate_per_minute"},
		{"rate a word", map[string]any{"rate_per_minute": "fast"}, "waiting_room.rate_per_minute"},
		{"rate too high", map[string]any{"rate_per_minute": 1_000_000}, "waiting_room.rate_per_minute"},
		{"rate fractional", map[string]any{"rate_per_minute": 1.5}, "waiting_room.rate_per_minute"},
	} {
		e := org.do("PATCH", path, map[string]any{"waiting_room": tc.room, "name": "Renamed"}).
			wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if e.Fields[tc.field] == "" {
			t.Errorf("%s: no message for %s in %v", tc.name, tc.field, e.Fields)
		}
	}
	org.do("PATCH", path, map[string]any{"waiting_room": "on"}).want(t, http.StatusUnprocessableEntity)
	var got struct {
		Name        string         `json:"name"`
		WaitingRoom map[string]any `json:"waiting_room"`
	}
	org.do("GET", path, nil).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom != nil || got.Name == "Renamed" {
		t.Fatalf("refused changes were written: %+v", got)
	}

	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	org.do("PATCH", path, map[string]any{"waiting_room": map[string]any{"enabled": true,
		"opens_at": opens.Format(time.RFC3339), "rate_per_minute": "auto"}}).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom["enabled"] != true || got.WaitingRoom["rate_per_minute"] != "auto" ||
		got.WaitingRoom["opens_at"] != opens.Format(time.RFC3339) {
		t.Fatalf("auto room: %+v", got.WaitingRoom)
	}
	org.do("PATCH", path, map[string]any{"waiting_room": map[string]any{"rate_per_minute": 120}}).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom["enabled"] != true || got.WaitingRoom["rate_per_minute"] != float64(120) {
		t.Fatalf("rate changed alone: %+v", got.WaitingRoom)
	}
	org.do("PATCH", path, map[string]any{"waiting_room": map[string]any{"enabled": false}}).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom["enabled"] != false {
		t.Fatalf("turned off: %+v", got.WaitingRoom)
	}
	// The room's state reaches the gate through the event's cache, which
	// follows the change feed.
	buyer := s.as(tn.Org, tn.Buyers[0])
	testsvc.Eventually(t, 15*time.Second, "the map open again", func() bool {
		return buyer.do("GET", "/e/"+ev.ID.String(), nil).status == http.StatusOK
	})

	// The event's edit form: on, an opening and a rate; a bad rate is
	// shown in the form (422) and changes nothing.
	form := func(v url.Values) response {
		return org.do("POST", "/admin/events/"+ev.ID.String(), raw{"application/x-www-form-urlencoded", []byte(v.Encode())})
	}
	edit := org.do("GET", "/admin/events/"+ev.ID.String()+"/edit", nil).want(t, http.StatusOK)
	if !strings.Contains(string(edit.body), `data-testid="waiting-room-fields"`) {
		t.Fatal("no waiting room fields on the edit form")
	}
	v := url.Values{"name": {"Test event"}, "venue": {"Test hall"}, "time_zone": {"UTC"},
		"starts_at": {ev.StartsAt.UTC().Format("2006-01-02T15:04")}, "waiting_room_form": {"1"},
		"waiting_room_enabled": {"on"}, "waiting_room_opens_at": {opens.Format("2006-01-02T15:04")}, "waiting_room_rate": {"lots"}}
	if r := form(v).want(t, http.StatusUnprocessableEntity); !strings.Contains(string(r.body), "visitors a minute between") {
		t.Fatalf("the form's refusal does not say why: %s", r.body)
	}
	v.Set("waiting_room_rate", "240")
	form(v).want(t, http.StatusSeeOther)
	org.do("GET", path, nil).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom["enabled"] != true || got.WaitingRoom["rate_per_minute"] != float64(240) {
		t.Fatalf("after the form: %+v", got.WaitingRoom)
	}

	// The dashboard's panel: figures and the rate control.
	panel := org.do("GET", "/admin/events/"+ev.ID.String()+"/queue", nil).want(t, http.StatusOK)
	for _, want := range []string{`data-testid="queue-waiting"`, `data-testid="queue-per-minute"`, `data-testid="queue-clear-in"`, `name="rate_per_minute"`} {
		if !strings.Contains(string(panel.body), want) {
			t.Fatalf("the panel lacks %s: %s", want, panel.body)
		}
	}
	rate := func(r string) response {
		return org.do("POST", "/admin/events/"+ev.ID.String()+"/queue/rate",
			raw{"application/x-www-form-urlencoded", []byte(url.Values{"rate_per_minute": {r}}.Encode())}).want(t, http.StatusOK)
	}
	if r := rate("-3"); !strings.Contains(string(r.body), "role=\"alert\"") {
		t.Fatalf("a refused rate is not shown: %s", r.body)
	}
	rate("auto")
	org.do("GET", path, nil).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom["rate_per_minute"] != "auto" {
		t.Fatalf("after the panel's form: %+v", got.WaitingRoom)
	}
	s.as(tn.Org, tn.Buyers[0]).do("GET", "/admin/events/"+ev.ID.String()+"/queue", nil).want(t, http.StatusForbidden)
}

// TestQueueOffWhenSoldOut: the admitter turns off the room of an event
// that sold out, and the map opens to everyone (to see it is sold out and
// join the waitlist).
func TestQueueOffWhenSoldOut(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	org, buyer := s.as(tn.Org, tn.Organizer), s.as(tn.Org, tn.Buyers[0])
	roomOn(t, org, ev.ID, 60)
	buyer.do("GET", "/e/"+ev.ID.String(), nil).want(t, http.StatusSeeOther)
	sale(t, a, tn.BoxOffice, ev.ID, testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)...)
	if _, err := a.Admitter.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		WaitingRoom map[string]any `json:"waiting_room"`
	}
	org.do("GET", "/api/v1/events/"+ev.ID.String(), nil).want(t, http.StatusOK).json(t, &got)
	if got.WaitingRoom["enabled"] != false {
		t.Fatalf("the room of a sold-out event: %+v", got.WaitingRoom)
	}
	buyer.do("GET", "/e/"+ev.ID.String(), nil).want(t, http.StatusOK)
}

// TestQueueRedisDownClosed: with Redis down the room fails closed: the
// line answers 503 unavailable with Retry-After and says places are kept,
// the page says so too, the map still sends visitors to the line, and
// the admitter lets nobody in; an admitted visitor keeps choosing.
func TestQueueRedisDownClosed(t *testing.T) {
	t.Parallel()
	rdb := testsvc.StartRedis(t)
	s := newTestServer(t, func(c *config.Config) { c.RedisURL = rdb.URL() })
	a := s.app
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 5)
	id := ev.ID.String()
	roomOn(t, s.as(tn.Org, tn.Organizer), ev.ID, 6000)
	admitted, waiting := s.as(tn.Org, tn.Buyers[0]), s.as(tn.Org, tn.Buyers[1])
	admitted.do("POST", "/api/v1/events/"+id+"/queue", nil).want(t, http.StatusOK)
	admitAll(t, s, admitted, ev.ID)
	admitted.do("POST", "/api/v1/events/"+id+"/queue", nil).want(t, http.StatusOK)

	rdb.Stop()
	r := waiting.do("POST", "/api/v1/events/"+id+"/queue", nil)
	if e := r.wantErr(t, http.StatusServiceUnavailable, "unavailable"); !strings.Contains(e.Message, "place is kept") {
		t.Fatalf("the answer does not say places are kept: %q", e.Message)
	}
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if p := waiting.do("GET", "/e/"+id+"/queue", nil).want(t, http.StatusServiceUnavailable); !strings.Contains(string(p.body), "nobody is let in") {
		t.Fatalf("the page does not say the room is closed: %s", p.body)
	}
	waiting.do("GET", "/e/"+id, nil).want(t, http.StatusSeeOther)
	if n, err := a.Admitter.Tick(context.Background()); err == nil || n != 0 {
		t.Fatalf("admitter with Redis down: %d admitted, err %v", n, err)
	}
	admitted.do("GET", "/e/"+id, nil).want(t, http.StatusOK)
}

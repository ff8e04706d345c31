package web

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/live"
	"seatd/web/staff"
)

// dialAs opens the seat-map socket of an event with c's cookies and extra
// headers (name, value pairs).
func (s *testServer) dialAs(t *testing.T, c *client, event uuid.UUID, hdr ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u, _ := url.Parse(s.ts.URL)
	h := http.Header{"Origin": {s.ts.URL}}
	for _, k := range c.hc.Jar.Cookies(u) {
		h.Add("Cookie", k.Name+"="+k.Value)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	conn, resp, err := websocket.DefaultDialer.Dial("ws://"+u.Host+"/live/events/"+event.String(), h)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close() })
	}
	return conn, resp, err
}

// wantRefused expects conn to be closed at once with 1013 and a reason
// containing why.
func wantRefused(t *testing.T, conn *websocket.Conn, why string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, _, err := conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != live.CodeTooMany || !strings.Contains(ce.Text, why) {
		t.Fatalf("socket over the cap: %v, want close %d %q", err, live.CodeTooMany, why)
	}
}

// TestSocketCaps: a session may hold MaxSocketsPerSession sockets and the
// process MaxSockets; one more is closed at once with 1013 and a reason
// saying which cap, and a freed place can be taken again.
func TestSocketCaps(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		c.MaxSocketsPerSession = 2
		c.MaxSockets = 4
	})
	tn := testenv.NewTenant(t, s.app, 3)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	a, b, c := s.as(tn.Org, tn.Buyers[0]), s.as(tn.Org, tn.Buyers[1]), s.as(tn.Org, tn.Buyers[2])
	var first *websocket.Conn
	for i := range 2 {
		conn, _, err := s.dialAs(t, a, ev.ID)
		if err != nil {
			t.Fatalf("socket %d of a session: %v", i+1, err)
		}
		if i == 0 {
			first = conn
		}
	}
	conn, _, err := s.dialAs(t, a, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, conn, "for this session")
	for range 2 {
		if _, _, err := s.dialAs(t, b, ev.ID); err != nil {
			t.Fatal(err)
		}
	}
	conn, _, err = s.dialAs(t, c, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, conn, "server has too many")
	if st := s.srv.hub.Stats(); st.Clients != 4 || st.Refused != 2 {
		t.Fatalf("hub: %d sockets, %d refused; want 4 and 2", st.Clients, st.Refused)
	}
	// A socket that leaves frees its place.
	_ = first.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	testsvc.Eventually(t, 5*time.Second, "the closed socket uncounted", func() bool { return s.srv.hub.Stats().Clients <= 3 })
	conn, _, err = s.dialAs(t, c, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := conn.ReadMessage(); errors.As(err, new(*websocket.CloseError)) {
		t.Fatalf("socket in a freed place was closed: %v", err)
	}
}

// TestUpgradeRateLimit: live socket upgrades are limited per client IP
// (429 before the upgrade); another client is not affected.
func TestUpgradeRateLimit(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.UpgradeRatePerMinute = 3
	})
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	b := s.as(tn.Org, tn.Buyers[0])
	ip := randomIPv4()
	oneLimiterMinute(s)
	for i := range 3 {
		conn, _, err := s.dialAs(t, b, ev.ID, "X-Forwarded-For", ip)
		if err != nil {
			t.Fatalf("upgrade %d: %v", i+1, err)
		}
		_ = conn.Close()
	}
	_, resp, err := s.dialAs(t, b, ev.ID, "X-Forwarded-For", ip)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("4th upgrade from one IP: %v %v, want 429 with Retry-After", resp, err)
	}
	if _, _, err := s.dialAs(t, b, ev.ID, "X-Forwarded-For", randomIPv4()); err != nil {
		t.Fatalf("upgrade from another IP: %v", err)
	}
}

// TestReconcileCooldownAPI: a second reconcile within the cooldown answers
// 200 with the first one's result and time.
func TestReconcileCooldownAPI(t *testing.T) {
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	org := s.as(tn.Org, tn.Organizer)
	path := "/api/v1/events/" + ev.ID.String() + "/registry/reconcile"
	var first, second struct {
		Postgres  int       `json:"postgres"`
		CheckedAt time.Time `json:"checked_at"`
	}
	org.do("POST", path, nil).want(t, http.StatusOK).json(t, &first)
	coreHold(t, s.app, tn.Buyers[0], ev.ID, testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[0])
	org.do("POST", path, nil).want(t, http.StatusOK).json(t, &second)
	if !first.CheckedAt.Equal(second.CheckedAt) || second.Postgres != 0 {
		t.Fatalf("second reconcile within the cooldown ran again: %+v then %+v", first, second)
	}
}

// TestEventHoldsPagination: the staff hold list comes in keyset pages
// with a next cursor; every hold once, soonest expiry first; bad limit or
// cursor is 422.
func TestEventHoldsPagination(t *testing.T) {
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 5)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	want := map[uuid.UUID]bool{}
	for i := range 7 {
		for _, h := range coreHold(t, s.app, tn.Buyers[i%2], ev.ID, seats[i]) {
			want[h.ID] = true
		}
	}
	box := s.as(tn.Org, tn.BoxOffice)
	base := "/api/v1/events/" + ev.ID.String() + "/holds"
	type page struct {
		Holds []holdOf `json:"holds"`
		Next  *string  `json:"next"`
	}
	seen := map[uuid.UUID]bool{}
	var sizes []int
	var last time.Time
	path := base + "?limit=3"
	for {
		var p page
		box.do("GET", path, nil).want(t, http.StatusOK).json(t, &p)
		sizes = append(sizes, len(p.Holds))
		for _, h := range p.Holds {
			if seen[h.ID] || !want[h.ID] || h.UserID == nil {
				t.Fatalf("hold %s: repeated, unknown or without holder", h.ID)
			}
			seen[h.ID] = true
			at, err := time.Parse(time.RFC3339Nano, h.HeldUntil)
			if err != nil || at.Before(last) {
				t.Fatalf("holds out of order: %s after %s (%v)", h.HeldUntil, last, err)
			}
			last = at
		}
		if p.Next == nil {
			break
		}
		path = base + "?limit=3&after=" + url.QueryEscape(*p.Next)
	}
	if len(seen) != 7 || len(sizes) != 3 || sizes[0] != 3 || sizes[2] != 1 {
		t.Fatalf("pages %v covering %d holds, want 3+3+1 covering 7", sizes, len(seen))
	}
	var all page
	box.do("GET", base, nil).want(t, http.StatusOK).json(t, &all)
	if len(all.Holds) != 7 || all.Next != nil {
		t.Fatalf("default page: %d holds, next %v", len(all.Holds), all.Next)
	}
	for _, q := range []struct{ query, field string }{
		{"?limit=0", "limit"}, {"?limit=501", "limit"}, {"?limit=x", "limit"},
		{"?after=not-a-cursor", "after"}, {"?after=" + url.QueryEscape("MjAyNXxub3BlCg"), "after"},
	} {
		e := box.do("GET", base+q.query, nil).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if e.Fields[q.field] == "" {
			t.Errorf("%s: fields %v lack %s", q.query, e.Fields, q.field)
		}
	}
}

// TestStaffReleaseNeedsReason: staff releasing through the API must give
// a reason (422 invalid with fields.reason when missing or blank), as on
// the box-office page; nothing is released without one. A buyer
// releasing their own hold needs none.
func TestStaffReleaseNeedsReason(t *testing.T) {
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	h := coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[0])[0]
	before := orgState(t, s.app, tn.Org.ID)
	for _, role := range []struct {
		name string
		c    *client
	}{{"box office", s.as(tn.Org, tn.BoxOffice)}, {"organizer", s.as(tn.Org, tn.Organizer)}} {
		for _, body := range []any{nil, map[string]string{}, map[string]string{"reason": "   "}} {
			e := role.c.do("DELETE", "/api/v1/holds/"+h.ID.String(), body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
			if e.Fields["reason"] == "" {
				t.Fatalf("%s, body %v: fields %v lack reason", role.name, body, e.Fields)
			}
		}
	}
	if after := orgState(t, s.app, tn.Org.ID); after != before {
		t.Fatal("a release without a reason changed something")
	}
	s.as(tn.Org, tn.BoxOffice).do("DELETE", "/api/v1/holds/"+h.ID.String(), map[string]string{"reason": "customer called"}).
		want(t, http.StatusNoContent)
	own := coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[1])[0]
	s.as(tn.Org, tn.Buyers[0]).do("DELETE", "/api/v1/holds/"+own.ID.String(), nil).want(t, http.StatusNoContent)
}

var holdRowRe = regexp.MustCompile(`<tbody id="hold-`)
var nextLinkRe = regexp.MustCompile(`href="([^"]*)" rel="next"`)

// TestBoxOfficeHoldPages: the box office shows holds a page at a time
// with a link to the next page.
func TestBoxOfficeHoldPages(t *testing.T) {
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 11)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 11, 10)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	for i, b := range tn.Buyers {
		coreHold(t, s.app, b, ev.ID, seats[i*10:i*10+10]...)
	}
	box := s.as(tn.Org, tn.BoxOffice)
	r := box.do("GET", "/box-office/events/"+ev.ID.String(), nil).want(t, http.StatusOK)
	if n := len(holdRowRe.FindAll(r.body, -1)); n != staff.HoldPageRows {
		t.Fatalf("first page shows %d holds, want %d", n, staff.HoldPageRows)
	}
	m := nextLinkRe.FindSubmatch(r.body)
	if m == nil {
		t.Fatal("no next-page link on the first page of 110 holds")
	}
	next := strings.ReplaceAll(string(m[1]), "&amp;", "&")
	r = box.do("GET", next, nil).want(t, http.StatusOK)
	if n := len(holdRowRe.FindAll(r.body, -1)); n != 10 {
		t.Fatalf("second page shows %d holds, want 10", n)
	}
	if nextLinkRe.Match(r.body) || !strings.Contains(string(r.body), "First page") {
		t.Fatal("last page: want no next link and a link to the first page")
	}
}

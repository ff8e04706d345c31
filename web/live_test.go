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

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// socket opens the live stream of an event as client c (its cookies), with
// the given Origin ("" sends none).
func (s *testServer) socket(t *testing.T, c *client, event uuid.UUID, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u, _ := url.Parse(s.ts.URL)
	wsURL := "ws://" + u.Host + "/live/events/" + event.String()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	if c != nil {
		for _, k := range c.hc.Jar.Cookies(u) {
			h.Add("Cookie", k.Name+"="+k.Value)
		}
	}
	conn, resp, err := websocket.DefaultDialer.Dial(wsURL, h)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close() })
	}
	return conn, resp, err
}

var seatFrag = regexp.MustCompile(`<button[^>]*id="seat-([0-9a-f-]+)"[^>]*>`)

// waitSeat reads frames until one carries the seat's fragment with the
// wanted status, and returns that fragment's opening tag.
func waitSeat(t *testing.T, conn *websocket.Conn, seat uuid.UUID, status string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	_ = conn.SetReadDeadline(deadline)
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for seat %s %s: %v", seat, status, err)
		}
		for _, m := range seatFrag.FindAllStringSubmatch(string(msg), -1) {
			if m[1] == seat.String() && strings.Contains(m[0], `data-status="`+status+`"`) {
				return m[0]
			}
		}
	}
}

// TestLiveSocketHoldAndRelease: buyer X watches, buyer Y holds and
// releases; X gets both changes as seat fragments.
func TestLiveSocketHoldAndRelease(t *testing.T) {
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 5)
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[6]
	x := s.as(tn.Org, tn.Buyers[0])
	y := s.as(tn.Org, tn.Buyers[1])
	conn, _, err := s.socket(t, x, ev.ID, s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	ySock, _, err := s.socket(t, y, ev.ID, s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	r := y.do("POST", "/api/v1/events/"+ev.ID.String()+"/holds", map[string]string{"seat_id": seat.String()}).want(t, 201)
	frag := waitSeat(t, conn, seat, "held", 5*time.Second)
	heldLatency := time.Since(start)
	if strings.Contains(frag, "data-mine") {
		t.Fatalf("X's fragment says the seat is X's: %s", frag)
	}
	// The holder's own socket gets the "mine" variant.
	if own := waitSeat(t, ySock, seat, "held", 5*time.Second); !strings.Contains(own, `data-mine="true"`) {
		t.Fatalf("Y's fragment lacks data-mine: %s", own)
	}
	var h struct{ ID string }
	r.json(t, &h)
	start = time.Now()
	y.do("DELETE", "/api/v1/holds/"+h.ID, nil).want(t, 204)
	waitSeat(t, conn, seat, "available", 5*time.Second)
	t.Logf("live latency request→fragment at a watcher: held %v, released %v",
		heldLatency.Round(time.Microsecond), time.Since(start).Round(time.Microsecond))
}

// TestLiveSocketRefusals: no session, a foreign Origin, or another org's
// event is refused before the upgrade.
func TestLiveSocketRefusals(t *testing.T) {
	s := newTestServer(t, nil)
	ta := testenv.NewTenant(t, s.app, 1)
	tb := testenv.NewTenant(t, s.app, 1)
	evA := testenv.NewEvent(t, s.app, ta.Org.ID, 1, 1, 2)
	b := s.as(tb.Org, tb.Buyers[0])
	a := s.as(ta.Org, ta.Buyers[0])
	cases := []struct {
		name   string
		c      *client
		origin string
		want   int
	}{
		{"cookieless", nil, s.ts.URL, http.StatusUnauthorized},
		{"foreign origin", a, "https://evil.example", http.StatusForbidden},
		{"no origin", a, "", http.StatusForbidden},
		{"other org's event", b, s.ts.URL, http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := s.socket(t, tc.c, evA.ID, tc.origin)
			if err == nil {
				t.Fatal("upgrade accepted")
			}
			if resp == nil || resp.StatusCode != tc.want {
				t.Fatalf("status %v, want %d (%v)", resp, tc.want, err)
			}
		})
	}
	// The same session with the right origin is accepted (the refusals are
	// about the failing part, not the route).
	if _, _, err := s.socket(t, a, evA.ID, s.ts.URL); err != nil {
		t.Fatalf("valid upgrade refused: %v", err)
	}
}

// TestLiveAcrossProcesses: two server processes (separate apps: hot
// caches, hubs, Redis clients) on the same databases; a hold through one
// reaches a socket on the other.
func TestLiveAcrossProcesses(t *testing.T) {
	s1 := newTestServer(t, nil)
	s2 := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s1.app, 2)
	ev := testenv.NewEvent(t, s1.app, tn.Org.ID, 1, 2, 5)
	seat := testenv.SeatIDs(t, s1.app, tn.Org.ID, ev.ID)[3]
	watcher := s2.as(tn.Org, tn.Buyers[0])
	conn, _, err := s2.socket(t, watcher, ev.ID, s2.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	holder := s1.as(tn.Org, tn.Buyers[1])
	start := time.Now()
	holder.do("POST", "/api/v1/events/"+ev.ID.String()+"/holds", map[string]string{"seat_id": seat.String()}).want(t, 201)
	waitSeat(t, conn, seat, "held", 5*time.Second)
	t.Logf("hold on process 1 seen on a process-2 socket after %v", time.Since(start).Round(time.Microsecond))
	// And the other process's API agrees at once.
	var seats struct {
		Seats []struct {
			ID     string
			Status store.SeatStatus
		}
	}
	watcher.do("GET", "/api/v1/events/"+ev.ID.String()+"/seats", nil).want(t, 200).json(t, &seats)
	for _, st := range seats.Seats {
		if st.ID == seat.String() && st.Status != store.Held {
			t.Fatalf("process 2 says %s", st.Status)
		}
	}
}

// TestLogoutClosesSockets: signing out ends that session's live sockets.
func TestLogoutClosesSockets(t *testing.T) {
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 2)
	c := s.as(tn.Org, tn.Buyers[0])
	conn, _, err := s.socket(t, c, ev.ID, s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.do("POST", "/logout", nil).want(t, 204)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("socket ended with %v, want a close frame", err)
			}
			t.Logf("socket closed at logout with code %d", ce.Code)
			return
		}
	}
}

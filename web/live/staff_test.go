package live_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testsvc"
	"seatd/web/live"
)

// fakeStaff renders a staff frame that names the stream and the batch's
// sizes, and records every call.
type fakeStaff struct {
	block   chan struct{} // if set, renders wait for it to close
	started atomic.Int32  // renders begun

	mu    sync.Mutex
	calls []staffCall
}

type staffCall struct {
	stream live.Stream
	batch  live.StaffBatch
}

func (f *fakeStaff) RenderStaff(ctx context.Context, s live.Stream, b live.StaffBatch) []byte {
	f.started.Add(1)
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, staffCall{s, b})
	f.mu.Unlock()
	return fmt.Appendf(nil, `<div id="staff-%s" data-changes="%d" data-seats="%d" data-dropped="%d"></div>`,
		s, len(b.Changes), len(b.Seats), b.Dropped)
}

func (f *fakeStaff) callsFor(s live.Stream) []live.StaffBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []live.StaffBatch
	for _, c := range f.calls {
		if c.stream == s {
			out = append(out, c.batch)
		}
	}
	return out
}

type staffEnv struct {
	t     *testing.T
	org   uuid.UUID
	src   *fakeSource
	rend  *fakeRenderer
	staff *fakeStaff
	hub   *live.Hub
	srv   *httptest.Server

	mu      sync.Mutex
	notices int
}

// newStaffEnv starts a hub with staff streams on; the route takes the
// viewer, role and stream included, from the query string.
func newStaffEnv(t *testing.T, staff *fakeStaff, interval time.Duration, enable bool) *staffEnv {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	e := &staffEnv{t: t, org: uuid.New(), src: newFakeSource(), rend: newFakeRenderer(0), staff: staff}
	e.hub = live.New(e.src, e.rend, nil, live.Options{})
	if enable {
		e.hub.EnableStaff(live.StaffOptions{Renderer: staff, Interval: interval, FeedSize: 50,
			Notice: func(d hold.Delta) []byte {
				e.mu.Lock()
				e.notices++
				e.mu.Unlock()
				return fmt.Appendf(nil, `<p class="notice" data-seat="%s"></p>`, d.Seat)
			}})
	}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var stream live.Stream
		switch q.Get("stream") {
		case "dashboard":
			stream = live.StreamDashboard
		case "box-office":
			stream = live.StreamBoxOffice
		}
		e.hub.Serve(w, r, live.Viewer{
			Actor:  hold.Actor{Org: e.org, User: uuid.MustParse(q.Get("user")), Role: hold.Role(q.Get("role"))},
			Event:  uuid.MustParse(q.Get("event")),
			Role:   hold.Role(q.Get("role")),
			Stream: stream,
		})
	}))
	t.Cleanup(e.srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.hub.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

func (e *staffEnv) dial(event, user uuid.UUID, role hold.Role, stream string) (*websocket.Conn, int) {
	e.t.Helper()
	q := url.Values{"event": {event.String()}, "user": {user.String()}, "role": {string(role)}, "stream": {stream}}
	conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.srv.URL, "http")+"/?"+q.Encode(), nil)
	if err != nil {
		if resp == nil {
			e.t.Fatalf("dial: %v", err)
		}
		return nil, resp.StatusCode
	}
	e.t.Cleanup(func() { _ = conn.Close() })
	return conn, http.StatusSwitchingProtocols
}

func (e *staffEnv) mustDial(event, user uuid.UUID, role hold.Role, stream string) *websocket.Conn {
	e.t.Helper()
	c, status := e.dial(event, user, role, stream)
	if c == nil {
		e.t.Fatalf("dial %s as %s: status %d", stream, role, status)
	}
	return c
}

func (e *staffEnv) delta(event, seat uuid.UUID, kind string, status store.SeatStatus, version int64, user, actor uuid.UUID) hold.Delta {
	d := hold.Delta{Org: e.org, Event: event, Seat: seat, Kind: kind, Status: status, Version: version, Actor: actor, At: time.Now()}
	if status == "held" {
		d.UserID, d.HoldID, d.HeldUntil = user, uuid.New(), time.Now().Add(10*time.Minute)
	}
	return d
}

// readRaw reads one message within d; ok is false on timeout.
func readRaw(t *testing.T, conn *websocket.Conn, d time.Duration) (string, bool) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, b, err := conn.ReadMessage()
	if err != nil {
		if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
			return "", false
		}
		t.Fatalf("read: %v", err)
	}
	return string(b), true
}

// TestStaffFramesOncePerBatchAndStream: 20 dashboard and 10 box-office
// sockets get one staff frame each per batch, rendered once per stream;
// buyers on the same event get only seat fragments, never a staff frame.
func TestStaffFramesOncePerBatchAndStream(t *testing.T) {
	staff := &fakeStaff{}
	e := newStaffEnv(t, staff, 20*time.Millisecond, true)
	ev := uuid.New()
	var dash, box, buyers []*websocket.Conn
	for range 20 {
		dash = append(dash, e.mustDial(ev, uuid.New(), hold.RoleOrganizer, "dashboard"))
	}
	for range 10 {
		box = append(box, e.mustDial(ev, uuid.New(), hold.RoleBoxOffice, "box-office"))
	}
	for range 5 {
		buyers = append(buyers, e.mustDial(ev, uuid.New(), hold.RoleBuyer, ""))
	}
	if s := e.hub.Stats(); s.Clients != 35 || s.Staff != 30 || s.Watches != 1 {
		t.Fatalf("stats %+v, want 35 clients, 30 staff, one watch", s)
	}
	u := uuid.New()
	s1, s2 := uuid.New(), uuid.New()
	e.src.push(ev, e.delta(ev, s1, "held", "held", 2, u, u), e.delta(ev, s2, "held", "held", 2, u, u),
		e.delta(ev, s1, "released", "available", 3, uuid.Nil, u))

	for i, c := range dash {
		f, ok := readRaw(t, c, 5*time.Second)
		if !ok || f != `<div id="staff-dashboard" data-changes="3" data-seats="2" data-dropped="0"></div>` {
			t.Fatalf("dashboard %d got %q", i, f)
		}
	}
	for i, c := range box {
		f, ok := readRaw(t, c, 5*time.Second)
		if !ok || !strings.HasPrefix(f, `<div id="staff-box-office" data-changes="3" data-seats="2"`) {
			t.Fatalf("box office %d got %q", i, f)
		}
	}
	for i, c := range buyers {
		f, ok := readRaw(t, c, 5*time.Second)
		if !ok || strings.Contains(f, "staff-") || len(parseFrame(t, []byte(f))) != 2 {
			t.Fatalf("buyer %d got %q", i, f)
		}
		if extra, ok := readRaw(t, c, 100*time.Millisecond); ok {
			t.Fatalf("buyer %d got a second frame %q", i, extra)
		}
	}
	for _, c := range append(dash, box...) {
		if extra, ok := readRaw(t, c, 50*time.Millisecond); ok {
			t.Fatalf("staff socket got a second frame %q", extra)
		}
	}
	if d, b := len(staff.callsFor(live.StreamDashboard)), len(staff.callsFor(live.StreamBoxOffice)); d != 1 || b != 1 {
		t.Fatalf("RenderStaff called %d times for the dashboard, %d for the box office; want once each", d, b)
	}
	batch := staff.callsFor(live.StreamDashboard)[0]
	if batch.Org != e.org || batch.Event != ev || batch.Seats[0].Seat != s1 || batch.Seats[0].Version != 3 || batch.Seats[1].Seat != s2 {
		t.Fatalf("batch %+v: want org, event and the newest change per seat in arrival order", batch)
	}
}

// TestStaffStreamRoles: a buyer cannot open a staff stream.
func TestStaffStreamRoles(t *testing.T) {
	e := newStaffEnv(t, &fakeStaff{}, 0, true)
	ev := uuid.New()
	for _, tc := range []struct {
		role   hold.Role
		stream string
		want   int
	}{
		{hold.RoleBuyer, "dashboard", http.StatusForbidden},
		{hold.RoleBuyer, "box-office", http.StatusForbidden},
		{"", "dashboard", http.StatusForbidden},
		{hold.RoleBuyer, "", http.StatusSwitchingProtocols},
		{hold.RoleBoxOffice, "box-office", http.StatusSwitchingProtocols},
		{hold.RoleOrganizer, "dashboard", http.StatusSwitchingProtocols},
	} {
		if _, got := e.dial(ev, uuid.New(), tc.role, tc.stream); got != tc.want {
			t.Errorf("%s on %q: status %d, want %d", tc.role, tc.stream, got, tc.want)
		}
	}
}

func TestStaffStreamsOffByDefault(t *testing.T) {
	e := newStaffEnv(t, &fakeStaff{}, 0, false)
	if _, got := e.dial(uuid.New(), uuid.New(), hold.RoleOrganizer, "dashboard"); got != http.StatusNotFound {
		t.Errorf("staff stream on a hub without staff: %d, want 404", got)
	}
}

// TestStaffBatchKeepsEveryChange: changes arriving while a staff frame is
// due are batched with every change kept for the feed (up to FeedSize,
// the rest counted) and the newest per seat.
func TestStaffBatchKeepsEveryChange(t *testing.T) {
	staff := &fakeStaff{block: make(chan struct{})}
	e := newStaffEnv(t, staff, time.Millisecond, true)
	ev := uuid.New()
	c := e.mustDial(ev, uuid.New(), hold.RoleOrganizer, "dashboard")
	u := uuid.New()
	seat := uuid.New()
	// The first push starts a render, which blocks; the next 120 changes
	// pile up behind it.
	renders := staff.started.Load()
	e.src.push(ev, e.delta(ev, uuid.New(), "blocked", "blocked", 2, uuid.Nil, u))
	testsvc.Eventually(t, 5*time.Second, "the render of the first change started", func() bool { return staff.started.Load() > renders })
	for v := int64(2); v < 122; v++ {
		st, kind := store.Held, "held"
		if v%2 == 1 {
			st, kind = store.Available, "released"
		}
		e.src.push(ev, e.delta(ev, seat, kind, st, v, u, u))
	}
	close(staff.block)
	var frames []string
	for len(frames) < 2 {
		f, ok := readRaw(t, c, 5*time.Second)
		if !ok {
			t.Fatalf("got %d frames, want 2", len(frames))
		}
		frames = append(frames, f)
	}
	if want := `<div id="staff-dashboard" data-changes="50" data-seats="1" data-dropped="70"></div>`; frames[1] != want {
		t.Fatalf("second frame %q, want %q", frames[1], want)
	}
	last := staff.callsFor(live.StreamDashboard)[1]
	if got := last.Seats[0]; got.Version != 121 || last.Changes[49].Version != 121 || last.Changes[0].Version != 72 {
		t.Fatalf("batch kept versions seat %d, feed %d..%d; want 121, 72..121", got.Version, last.Changes[0].Version, last.Changes[49].Version)
	}
}

// TestStaffRenderNeverDelaysBuyers: while a staff render hangs, buyers'
// seat frames keep flowing.
func TestStaffRenderNeverDelaysBuyers(t *testing.T) {
	staff := &fakeStaff{block: make(chan struct{})}
	defer close(staff.block)
	e := newStaffEnv(t, staff, 0, true)
	ev := uuid.New()
	e.mustDial(ev, uuid.New(), hold.RoleOrganizer, "dashboard")
	b := e.mustDial(ev, uuid.New(), hold.RoleBuyer, "")
	for v := int64(2); v < 7; v++ {
		start := time.Now()
		e.src.push(ev, e.delta(ev, uuid.New(), "blocked", "blocked", v, uuid.Nil, uuid.New()))
		if fr := readFrame(t, b, 2*time.Second); len(fr) != 1 {
			t.Fatalf("buyer frame %+v", fr)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("buyer frame took %v behind a hanging staff render", d)
		}
	}
}

// TestReleaseNotice: when someone else releases a buyer's hold, that
// buyer's sockets (and only theirs) get the notice after the seat
// fragment, rendered once; releasing one's own hold brings no notice.
func TestReleaseNotice(t *testing.T) {
	e := newStaffEnv(t, &fakeStaff{}, 0, true)
	ev := uuid.New()
	holder, other, staffUser := uuid.New(), uuid.New(), uuid.New()
	h1 := e.mustDial(ev, holder, hold.RoleBuyer, "")
	h2 := e.mustDial(ev, holder, hold.RoleBuyer, "")
	o := e.mustDial(ev, other, hold.RoleBuyer, "")
	seat, own := uuid.New(), uuid.New()
	e.src.push(ev, e.delta(ev, seat, "held", "held", 2, holder, holder), e.delta(ev, own, "held", "held", 2, holder, holder))
	for _, c := range []*websocket.Conn{h1, h2, o} {
		readRaw(t, c, 5*time.Second)
	}

	e.src.push(ev, e.delta(ev, seat, "released", "available", 3, uuid.Nil, staffUser),
		e.delta(ev, own, "released", "available", 3, uuid.Nil, holder))
	for i, c := range []*websocket.Conn{h1, h2} {
		f, _ := readRaw(t, c, 5*time.Second)
		before, notice, ok := strings.Cut(f, `<p class="notice"`)
		if !ok || len(parseFrame(t, []byte(before))) != 2 || notice != ` data-seat="`+seat.String()+`"></p>` {
			t.Fatalf("holder socket %d got %q, want both seats then one notice for %s", i, f, seat)
		}
	}
	if f, _ := readRaw(t, o, 5*time.Second); strings.Contains(f, "notice") {
		t.Fatalf("another buyer got the notice: %q", f)
	}
	e.mu.Lock()
	n := e.notices
	e.mu.Unlock()
	if n != 1 {
		t.Fatalf("notice rendered %d times, want once", n)
	}
}

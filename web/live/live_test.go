package live_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/live"
)

// The hold core is the production Source.
var _ live.Source = (*hold.Engine)(nil)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource records watches and lets a test push deltas to them.
type fakeSource struct {
	delay time.Duration // before Watch answers, to widen races

	mu      sync.Mutex
	err     error
	watches int
	cancels int
	next    int
	fs      map[int]watch
}

type watch struct {
	event uuid.UUID
	actor hold.Actor
	f     func([]hold.Delta)
}

func newFakeSource() *fakeSource { return &fakeSource{fs: map[int]watch{}} }

func (s *fakeSource) Watch(ctx context.Context, a hold.Actor, event uuid.UUID, f func([]hold.Delta)) (func(), error) {
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	s.watches++
	s.next++
	id := s.next
	s.fs[id] = watch{event: event, actor: a, f: f}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.fs, id)
			s.cancels++
		})
	}, nil
}

func (s *fakeSource) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// push calls, as the core does, every watcher of the event synchronously.
func (s *fakeSource) push(event uuid.UUID, ds ...hold.Delta) {
	s.mu.Lock()
	var fs []func([]hold.Delta)
	for _, w := range s.fs {
		if w.event == event {
			fs = append(fs, w.f)
		}
	}
	s.mu.Unlock()
	for _, f := range fs {
		f(ds)
	}
}

// counts returns Watch calls, cancel calls and watches still open.
func (s *fakeSource) counts() (watches, cancels, open int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches, s.cancels, len(s.fs)
}

// fakeRenderer renders a seat element and counts its calls.
type fakeRenderer struct {
	pad int // bytes of filler per fragment, to make frames big

	mu    sync.Mutex
	calls map[renderKey]int
}

type renderKey struct {
	seat    uuid.UUID
	version int64
	mine    bool
}

func newFakeRenderer(pad int) *fakeRenderer {
	return &fakeRenderer{pad: pad, calls: map[renderKey]int{}}
}

func (r *fakeRenderer) Render(d hold.Delta, mine bool) []byte {
	r.mu.Lock()
	r.calls[renderKey{d.Seat, d.Version, mine}]++
	r.mu.Unlock()
	m := ""
	if mine {
		m = ` data-mine="true"`
	}
	return fmt.Appendf(nil, `<div id="seat-%s" data-status="%s" data-version="%d"%s>%s</div>`,
		d.Seat, d.Status, d.Version, m, strings.Repeat("x", r.pad))
}

func (r *fakeRenderer) count(seat uuid.UUID, version int64, mine bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[renderKey{seat, version, mine}]
}

func (r *fakeRenderer) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

// fragment is one seat element parsed from a frame.
type fragment struct {
	Seat    uuid.UUID
	Status  string
	Version int64
	Mine    bool
}

var fragmentRE = regexp.MustCompile(`^<div id="seat-([0-9a-f-]{36})" data-status="(\w+)" data-version="(\d+)"( data-mine="true")?>$`)

// parseFrame splits a frame into seat elements. It matches each opening
// tag alone: a regexp run over the padding is slow under -race.
func parseFrame(t *testing.T, b []byte) []fragment {
	t.Helper()
	var out []fragment
	rest := string(b)
	for rest != "" {
		elem, after, ok := strings.Cut(rest, "</div>")
		tag, body, ok2 := strings.Cut(elem, ">")
		m := fragmentRE.FindStringSubmatch(tag + ">")
		if !ok || !ok2 || m == nil || strings.Trim(body, "x") != "" {
			t.Errorf("frame is not a run of seat elements: %.80q", rest)
			return out
		}
		v, _ := strconv.ParseInt(m[3], 10, 64)
		out = append(out, fragment{uuid.MustParse(m[1]), m[2], v, m[4] != ""})
		rest = after
	}
	return out
}

type env struct {
	t    *testing.T
	org  uuid.UUID
	src  *fakeSource
	rend *fakeRenderer
	hub  *live.Hub
	srv  *httptest.Server
}

type envOptions struct {
	opts       live.Options
	pad        int
	watchDelay time.Duration
	listener   func(net.Listener) net.Listener
	waitlist   *live.WaitlistOptions // live waitlist panels on, if set
}

// newEnv starts a hub behind a test server whose route takes the viewer
// from the query string (the real route takes it from the session).
func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	// Registered first, so it runs after every other cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	e := &env{t: t, org: uuid.New(), src: newFakeSource(), rend: newFakeRenderer(o.pad)}
	e.src.delay = o.watchDelay
	e.hub = live.New(e.src, e.rend, nil, o.opts)
	if o.waitlist != nil {
		e.hub.EnableWaitlist(*o.waitlist)
	}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		e.hub.Serve(w, r, live.Viewer{
			Actor:        hold.Actor{Org: e.org, User: uuid.MustParse(q.Get("user")), Role: hold.RoleBuyer},
			Event:        uuid.MustParse(q.Get("event")),
			SessionToken: q.Get("token"),
			Role:         hold.RoleBuyer,
		})
	}))
	if o.listener != nil {
		e.srv.Listener = o.listener(e.srv.Listener)
	}
	e.srv.Start()
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

func (e *env) url(event, user uuid.UUID, token string) string {
	q := url.Values{"event": {event.String()}, "user": {user.String()}, "token": {token}}
	return "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/live?" + q.Encode()
}

// dial opens a socket for user on event; it is closed at cleanup.
func (e *env) dial(event, user uuid.UUID, token string) *websocket.Conn {
	e.t.Helper()
	return e.dialWith(websocket.DefaultDialer, event, user, token)
}

func (e *env) dialWith(d *websocket.Dialer, event, user uuid.UUID, token string) *websocket.Conn {
	e.t.Helper()
	conn, resp, err := d.Dial(e.url(event, user, token), nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial: %v (status %d)", err, status)
	}
	e.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func (e *env) delta(event, seat uuid.UUID, status store.SeatStatus, version int64, user uuid.UUID) hold.Delta {
	d := hold.Delta{Org: e.org, Event: event, Seat: seat, Kind: string(status), Status: status, Version: version, At: time.Now()}
	if status == "held" {
		d.UserID, d.HoldID, d.HeldUntil = user, uuid.New(), time.Now().Add(10*time.Minute)
	}
	return d
}

// readFrame reads one message within d.
func readFrame(t *testing.T, conn *websocket.Conn, d time.Duration) []fragment {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	typ, b, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	if typ != websocket.TextMessage {
		t.Fatalf("frame type %d, want text", typ)
	}
	return parseFrame(t, b)
}

// closeCode reads until the socket ends and returns its close code (1006
// when the connection dropped without a close frame).
func closeCode(conn *websocket.Conn, d time.Duration) (int, error) {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, err
		}
		return websocket.CloseAbnormalClosure, nil
	}
}

package live_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"seatd/internal/testsvc"
	"seatd/web/live"
)

func TestFanOutRendersOncePerDelta(t *testing.T) {
	const n = 200
	e := newEnv(t, envOptions{})
	ev := uuid.New()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i] = e.dial(ev, uuid.New(), "")
	}
	if s := e.hub.Stats(); s.Clients != n || s.Events[ev] != n || s.Watches != 1 {
		t.Fatalf("stats = %+v, want %d clients on one watch", s, n)
	}
	if w, _, _ := e.src.counts(); w != 1 {
		t.Fatalf("Watch called %d times for %d clients, want 1", w, n)
	}

	// receive reads one frame on every socket at once and returns what each
	// got and how long the slowest took.
	receive := func(push func()) ([][]fragment, time.Duration) {
		t.Helper()
		got := make([][]fragment, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i, c := range conns {
			wg.Go(func() {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, b, err := c.ReadMessage()
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = parseFrame(t, b)
			})
		}
		push()
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("read: %v", err)
		}
		return got, time.Since(start)
	}

	seat := uuid.New()
	got, took := receive(func() { e.src.push(ev, e.delta(ev, seat, "sold", 7, uuid.Nil)) })
	t.Logf("one delta reached all %d clients in %v", n, took)
	for i, fs := range got {
		if len(fs) != 1 || fs[0].Seat != seat || fs[0].Version != 7 || fs[0].Status != "sold" || fs[0].Mine {
			t.Fatalf("client %d got %+v", i, fs)
		}
	}
	if c := e.rend.count(seat, 7, false); c != 1 {
		t.Errorf("generic variant rendered %d times for %d clients, want 1", c, n)
	}
	if c := e.rend.count(seat, 7, true); c != 0 {
		t.Errorf("mine variant rendered %d times for a sold seat, want 0", c)
	}

	// Several deltas in one call make one frame per variant.
	batch := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	got, took = receive(func() {
		e.src.push(ev, e.delta(ev, batch[0], "sold", 2, uuid.Nil),
			e.delta(ev, batch[1], "blocked", 3, uuid.Nil), e.delta(ev, batch[2], "available", 4, uuid.Nil))
	})
	t.Logf("a batch of 3 deltas reached all %d clients as one frame in %v", n, took)
	for i, fs := range got {
		seats := make([]uuid.UUID, len(fs))
		for j, f := range fs {
			seats[j] = f.Seat
		}
		if !slices.Equal(seats, batch) {
			t.Fatalf("client %d got seats %v in one frame, want %v", i, seats, batch)
		}
	}
	for i, s := range batch {
		if c := e.rend.count(s, int64(i+2), false); c != 1 {
			t.Errorf("batch seat %d rendered %d times, want 1", i, c)
		}
	}
	if total := e.rend.total(); total != 4 {
		t.Errorf("renderer called %d times for 4 deltas and %d clients, want 4", total, n)
	}
}

// TestFramesCoalescePerTick: the first change after a quiet tick goes out
// at once; the changes pushed one by one while the tick runs reach the
// client together, in one frame, at the tick's end.
func TestFramesCoalescePerTick(t *testing.T) {
	const tick = 600 * time.Millisecond
	e := newEnv(t, envOptions{opts: live.Options{Tick: tick}})
	ev := uuid.New()
	c := e.dial(ev, uuid.New(), "")
	seats := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()}

	prompt := func(seat uuid.UUID) time.Time {
		t.Helper()
		sent := time.Now()
		e.src.push(ev, e.delta(ev, seat, "sold", 1, uuid.Nil))
		fs := readFrame(t, c, 5*time.Second)
		if took := time.Since(sent); len(fs) != 1 || fs[0].Seat != seat || took > tick/2 {
			t.Fatalf("after a quiet tick: %+v in %v, want seat %v alone and at once", fs, took, seat)
		}
		return sent
	}
	first := prompt(seats[0])
	for _, s := range seats[1:4] {
		e.src.push(ev, e.delta(ev, s, "held", 1, uuid.Nil))
	}
	fs := readFrame(t, c, 5*time.Second)
	var got []uuid.UUID
	for _, f := range fs {
		got = append(got, f.Seat)
	}
	if !slices.Equal(got, seats[1:4]) {
		t.Fatalf("changes within a tick came as %v, want %v in one frame", got, seats[1:4])
	}
	if waited := time.Since(first); waited < tick*3/4 {
		t.Fatalf("the tick's changes came %v after its first frame, want about %v", waited, tick)
	}
	time.Sleep(tick + tick/4) // a quiet tick
	prompt(seats[4])
}

func TestMineVariantOnlyForHolder(t *testing.T) {
	e := newEnv(t, envOptions{})
	ev := uuid.New()
	alice, bob, carol, dave := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	conns := map[string][]*websocket.Conn{
		"alice": {e.dial(ev, alice, "a1"), e.dial(ev, alice, "a2")},
		"bob":   {e.dial(ev, bob, "b")},
		"carol": {e.dial(ev, carol, "c")},
	}
	s1, s2, s3, s4 := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	e.src.push(ev,
		e.delta(ev, s1, "held", 1, alice),
		e.delta(ev, s2, "held", 1, bob),
		e.delta(ev, s3, "sold", 1, uuid.Nil),
		e.delta(ev, s4, "held", 1, dave), // dave has no socket here
	)
	wantMine := map[string]uuid.UUID{"alice": s1, "bob": s2}
	for who, cs := range conns {
		for _, c := range cs {
			fs := readFrame(t, c, 5*time.Second)
			var seats []uuid.UUID
			for _, f := range fs {
				seats = append(seats, f.Seat)
				if f.Mine != (f.Seat == wantMine[who]) {
					t.Errorf("%s: seat %v mine=%v", who, f.Seat, f.Mine)
				}
			}
			if !slices.Equal(seats, []uuid.UUID{s1, s2, s3, s4}) {
				t.Errorf("%s: got seats %v, want all four in order", who, seats)
			}
		}
	}
	for _, c := range []struct {
		seat       uuid.UUID
		generic, m int
	}{{s1, 1, 1}, {s2, 1, 1}, {s3, 1, 0}, {s4, 1, 0}} {
		if g, m := e.rend.count(c.seat, 1, false), e.rend.count(c.seat, 1, true); g != c.generic || m != c.m {
			t.Errorf("seat %v rendered generic %d mine %d times, want %d and %d", c.seat, g, m, c.generic, c.m)
		}
	}
}

// firstSmall shrinks the send buffer of the first connection the server
// accepts (the slow client's, dialed first), so a client that does not
// read blocks its writer after a few frames rather than megabytes. Other
// connections keep normal buffers: tiny ones make loopback crawl.
type firstSmall struct {
	net.Listener
	once sync.Once
}

func (l *firstSmall) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		l.once.Do(func() { _ = tc.SetWriteBuffer(4 << 10) })
	}
	return c, err
}

func TestSlowClientIsDroppedWithoutDelayingOthers(t *testing.T) {
	const (
		fast   = 5
		frames = 60
	)
	e := newEnv(t, envOptions{
		// A tick of a millisecond: the frames must come one by one to
		// fill the slow client's queue.
		opts:     live.Options{SendQueue: 4, Tick: time.Millisecond},
		pad:      32 << 10,
		listener: func(l net.Listener) net.Listener { return &firstSmall{Listener: l} },
	})
	ev := uuid.New()
	slowDialer := *websocket.DefaultDialer
	slowDialer.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}
	slow := e.dialWith(&slowDialer, ev, uuid.New(), "slow")
	fastConns := make([]*websocket.Conn, fast)
	for i := range fastConns {
		fastConns[i] = e.dial(ev, uuid.New(), "")
	}

	// Each fast client reads continuously and reports each frame's version.
	got := make([]chan int64, fast)
	var wg sync.WaitGroup
	for i, c := range fastConns {
		got[i] = make(chan int64, frames)
		wg.Go(func() {
			defer close(got[i])
			for range frames {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, b, err := c.ReadMessage()
				if err != nil {
					t.Errorf("fast client %d: %v", i, err)
					return
				}
				for _, f := range parseFrame(t, b) {
					got[i] <- f.Version
				}
			}
		})
	}

	seat := uuid.New()
	start := time.Now()
	var worst time.Duration
	droppedAt := int64(0)
	for v := int64(1); v <= frames; v++ {
		if droppedAt == 0 && e.hub.Stats().Dropped > 0 {
			droppedAt = v - 1
		}
		pushed := time.Now()
		e.src.push(ev, e.delta(ev, seat, "held", v, uuid.New()))
		for i := range got {
			select {
			case gv, ok := <-got[i]:
				if !ok || gv != v {
					t.Fatalf("fast client %d got version %d (open %v), want %d", i, gv, ok, v)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("fast client %d did not get frame %d within 2s", i, v)
			}
		}
		worst = max(worst, time.Since(pushed))
	}
	total := time.Since(start)
	wg.Wait()
	t.Logf("%d frames of %d KiB reached %d fast clients in %v (slowest frame %v) beside a client that never reads; "+
		"it was dropped after frame %d", frames, 32, fast, total, worst, droppedAt)
	// A hub that waited on the slow client would stall each frame until
	// the write timeout (10 s); the per-frame bound above already rules
	// that out, and the total stays well under one write timeout even on a
	// loaded 2-core machine with the race detector.
	if total > 8*time.Second {
		t.Errorf("fast clients took %v for %d frames, want < 8s", total, frames)
	}

	testsvc.Eventually(t, 5*time.Second, "the slow client to be dropped", func() bool {
		s := e.hub.Stats()
		return s.Dropped == 1 && s.Clients == fast
	})
	// Reading now, the slow client finds what was buffered, then the end.
	if _, err := closeCode(slow, 5*time.Second); err != nil {
		t.Fatalf("slow client's socket still open: %v", err)
	}
}

func TestWatchOnceAndCancelAfterLastClient(t *testing.T) {
	e := newEnv(t, envOptions{watchDelay: 50 * time.Millisecond})
	ev := uuid.New()
	const n = 20
	conns := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i] = e.dial(ev, uuid.New(), "") })
	}
	wg.Wait()
	if w, c, open := e.src.counts(); w != 1 || c != 0 || open != 1 {
		t.Fatalf("after %d concurrent joins: watches %d cancels %d open %d, want 1 0 1", n, w, c, open)
	}
	for _, c := range conns[1:] {
		_ = c.Close()
	}
	testsvc.Eventually(t, 5*time.Second, "one client left", func() bool { return e.hub.Stats().Clients == 1 })
	if _, c, _ := e.src.counts(); c != 0 {
		t.Fatalf("watch cancelled with a client still connected")
	}
	// The remaining client still gets changes.
	seat := uuid.New()
	e.src.push(ev, e.delta(ev, seat, "sold", 1, uuid.Nil))
	if fs := readFrame(t, conns[0], 5*time.Second); len(fs) != 1 || fs[0].Seat != seat {
		t.Fatalf("got %+v", fs)
	}

	// A clean close by the last client cancels the watch.
	_ = conns[0].WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
	testsvc.Eventually(t, 5*time.Second, "the watch to be cancelled", func() bool {
		_, c, open := e.src.counts()
		return c == 1 && open == 0
	})
	if s := e.hub.Stats(); s.Clients != 0 || s.Watches != 0 || len(s.Events) != 0 {
		t.Fatalf("stats after last client = %+v", s)
	}

	// A new first client watches again.
	e.dial(ev, uuid.New(), "")
	if w, _, open := e.src.counts(); w != 2 || open != 1 {
		t.Fatalf("rejoin: watches %d open %d, want 2 1", w, open)
	}
}

func TestWatchErrorIsServiceUnavailable(t *testing.T) {
	e := newEnv(t, envOptions{})
	ev := uuid.New()
	e.src.setErr(errors.New("postgres down"))
	_, resp, err := websocket.DefaultDialer.Dial(e.url(ev, uuid.New(), ""), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial with failing watch: err %v, resp %v; want 503", err, resp)
	}
	_ = resp.Body.Close()
	if s := e.hub.Stats(); s.Clients != 0 || s.Watches != 0 {
		t.Fatalf("stats after failed watch = %+v", s)
	}
	e.src.setErr(nil)
	e.dial(ev, uuid.New(), "")
	if s := e.hub.Stats(); s.Clients != 1 || s.Watches != 1 {
		t.Fatalf("stats after retry = %+v", s)
	}
}

func TestCloseSessionClosesOnlyThatSession(t *testing.T) {
	e := newEnv(t, envOptions{})
	ev1, ev2 := uuid.New(), uuid.New()
	u1, u2 := uuid.New(), uuid.New()
	mine := []*websocket.Conn{e.dial(ev1, u1, "s1"), e.dial(ev2, u1, "s1")}
	other := e.dial(ev1, u2, "s2")
	anon := e.dial(ev1, uuid.New(), "")

	e.hub.CloseSession("") // closes nothing
	e.hub.CloseSession("s1")
	for i, c := range mine {
		code, err := closeCode(c, 5*time.Second)
		if err != nil || code != live.CodeSessionEnded {
			t.Fatalf("s1 socket %d: close code %d, err %v; want %d", i, code, err, live.CodeSessionEnded)
		}
	}
	testsvc.Eventually(t, 5*time.Second, "s1's sockets to leave", func() bool { return e.hub.Stats().Clients == 2 })

	seat := uuid.New()
	e.src.push(ev1, e.delta(ev1, seat, "sold", 1, uuid.Nil))
	for _, c := range []*websocket.Conn{other, anon} {
		if fs := readFrame(t, c, 5*time.Second); len(fs) != 1 || fs[0].Seat != seat {
			t.Fatalf("got %+v", fs)
		}
	}
	// ev2 lost its only client, so its watch is gone.
	testsvc.Eventually(t, 5*time.Second, "ev2's watch to be cancelled", func() bool {
		_, c, open := e.src.counts()
		return c == 1 && open == 1
	})
}

func TestShutdownClosesEverything(t *testing.T) {
	e := newEnv(t, envOptions{})
	evs := []uuid.UUID{uuid.New(), uuid.New()}
	const n = 10
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		c := e.dial(evs[i%2], uuid.New(), "s")
		wg.Go(func() {
			code, err := closeCode(c, 5*time.Second)
			if err != nil {
				t.Errorf("socket not closed: %v", err)
			}
			codes <- code
		})
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.hub.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	t.Logf("Shutdown closed %d sockets and returned in %v", n, time.Since(start))
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != live.CodeRestart {
			t.Errorf("close code %d, want %d", code, live.CodeRestart)
		}
	}
	if w, c, open := e.src.counts(); w != 2 || c != 2 || open != 0 {
		t.Errorf("watches %d cancels %d open %d, want 2 2 0", w, c, open)
	}
	if s := e.hub.Stats(); s.Clients != 0 || s.Watches != 0 {
		t.Errorf("stats after shutdown = %+v", s)
	}
	_, resp, err := websocket.DefaultDialer.Dial(e.url(evs[0], uuid.New(), ""), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after shutdown: err %v, resp %v; want 503", err, resp)
	}
	_ = resp.Body.Close()
	// Goroutines are checked by the cleanup newEnv registered.
}

func TestShutdownDuringWatch(t *testing.T) {
	e := newEnv(t, envOptions{watchDelay: time.Minute})
	ev := uuid.New()
	status := make(chan int, 1)
	go func() {
		conn, resp, err := websocket.DefaultDialer.Dial(e.url(ev, uuid.New(), ""), nil)
		if err == nil {
			_ = conn.Close()
		}
		code := 0
		if resp != nil {
			code = resp.StatusCode
			_ = resp.Body.Close()
		}
		status <- code
	}()
	testsvc.Eventually(t, 5*time.Second, "the client to be waiting on its watch", func() bool { return e.hub.Stats().Clients == 1 })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.hub.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	t.Logf("Shutdown with a watch being set up returned in %v", time.Since(start))
	if code := <-status; code != http.StatusServiceUnavailable {
		t.Fatalf("handshake status %d, want 503", code)
	}
	if w, c, open := e.src.counts(); w != 0 || c != 0 || open != 0 {
		t.Errorf("watches %d cancels %d open %d, want none", w, c, open)
	}
}

func TestStaleAndForeignDeltasAreNotSent(t *testing.T) {
	e := newEnv(t, envOptions{})
	ev := uuid.New()
	c := e.dial(ev, uuid.New(), "")
	seat, marker := uuid.New(), uuid.New()

	e.src.push(ev, e.delta(ev, seat, "sold", 3, uuid.Nil))
	if fs := readFrame(t, c, 5*time.Second); len(fs) != 1 || fs[0].Version != 3 {
		t.Fatalf("got %+v", fs)
	}
	// Version 2 lost a race to version 3; a delta of another org or event
	// must never reach this event's sockets.
	foreignOrg := e.delta(ev, uuid.New(), "sold", 1, uuid.Nil)
	foreignOrg.Org = uuid.New()
	e.src.push(ev, e.delta(ev, seat, "held", 2, uuid.New()), foreignOrg, e.delta(uuid.New(), uuid.New(), "sold", 1, uuid.Nil))
	e.src.push(ev, e.delta(ev, marker, "sold", 1, uuid.Nil))
	// Frames arrive in order, so anything sent before the marker is read
	// first.
	fs := readFrame(t, c, 5*time.Second)
	if len(fs) != 1 || fs[0].Seat != marker {
		t.Fatalf("got %+v, want only the marker", fs)
	}
	if n := e.rend.count(seat, 2, false); n != 0 {
		t.Errorf("stale version rendered %d times", n)
	}
}

func TestPingsKeepLiveClientsAndDropDeadOnes(t *testing.T) {
	e := newEnv(t, envOptions{opts: live.Options{PongTimeout: 300 * time.Millisecond, PingPeriod: 100 * time.Millisecond}})
	ev := uuid.New()
	alive := e.dial(ev, uuid.New(), "")
	dead := e.dial(ev, uuid.New(), "") // never reads, so never answers a ping

	done := make(chan error, 1)
	go func() {
		_ = alive.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			// Reading answers the server's pings.
			_, b, err := alive.ReadMessage()
			if err != nil || len(b) > 0 {
				done <- err
				return
			}
		}
	}()
	testsvc.Eventually(t, 5*time.Second, "the silent client to be closed", func() bool { return e.hub.Stats().Clients == 1 })
	time.Sleep(time.Second) // not a condition: the reading client must stay over three pong timeouts
	if s := e.hub.Stats(); s.Clients != 1 {
		t.Fatalf("the reading client was closed: %+v", s)
	}
	e.src.push(ev, e.delta(ev, uuid.New(), "sold", 1, uuid.Nil))
	if err := <-done; err != nil {
		t.Fatalf("reading client: %v", err)
	}
	if _, err := closeCode(dead, 5*time.Second); err != nil {
		t.Fatalf("silent socket still open: %v", err)
	}
}

func TestOnMessageAndReadLimit(t *testing.T) {
	type msg struct {
		v    live.Viewer
		body string
	}
	got := make(chan msg, 1)
	e := newEnv(t, envOptions{opts: live.Options{
		MaxMessage: 1024,
		OnMessage:  func(v live.Viewer, b []byte) { got <- msg{v, string(b)} },
	}})
	ev, user := uuid.New(), uuid.New()
	c := e.dial(ev, user, "tok")
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"seat":"x"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m.body != `{"seat":"x"}` || m.v.Actor.User != user || m.v.Event != ev || m.v.SessionToken != "tok" {
			t.Fatalf("OnMessage got %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnMessage not called")
	}
	if err := c.WriteMessage(websocket.TextMessage, make([]byte, 2048)); err != nil {
		t.Fatal(err)
	}
	if code, err := closeCode(c, 5*time.Second); err != nil || code != websocket.CloseMessageTooBig {
		t.Fatalf("oversized message: close code %d, err %v; want 1009", code, err)
	}
	testsvc.Eventually(t, 5*time.Second, "the client to leave", func() bool { return e.hub.Stats().Clients == 0 })
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    string
		origins []string
		want    bool
	}{
		{"same", "seatd.example", []string{"https://seatd.example"}, true},
		{"same with port", "seatd.example:8080", []string{"http://seatd.example:8080"}, true},
		{"case", "SeatD.example", []string{"https://seatd.EXAMPLE"}, true},
		{"missing", "seatd.example", nil, false},
		{"other host", "seatd.example", []string{"https://evil.example"}, false},
		{"other port", "seatd.example:8080", []string{"https://seatd.example:9090"}, false},
		{"null", "seatd.example", []string{"null"}, false},
		{"not http", "seatd.example", []string{"ws://seatd.example"}, false},
		{"two", "seatd.example", []string{"https://seatd.example", "https://evil.example"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://"+tc.host+"/live/events/x", nil)
			for _, o := range tc.origins {
				r.Header.Add("Origin", o)
			}
			if got := live.SameOrigin(r); got != tc.want {
				t.Errorf("SameOrigin = %v, want %v", got, tc.want)
			}
		})
	}
}

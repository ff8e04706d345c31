package live_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"seatd/internal/hold"
	"seatd/internal/testsvc"
	"seatd/web/live"
)

// The hold core is the production WaitlistSource.
var _ live.WaitlistSource = (*hold.Engine)(nil)

// fakeLines is a waitlist source and renderer: a test sets each buyer's
// place in line, pushes changes and reads what was rendered.
type fakeLines struct {
	block chan struct{} // if set, renders wait for it to close

	mu      sync.Mutex
	fail    int // renders still to fail
	places  map[uuid.UUID]int
	watches map[int]func(hold.WaitlistChange)
	next    int
	started int
	calls   [][]uuid.UUID // the users of each finished render
	staff   int           // staff panels rendered
}

func newFakeLines() *fakeLines {
	return &fakeLines{places: map[uuid.UUID]int{}, watches: map[int]func(hold.WaitlistChange){}}
}

func (l *fakeLines) WatchWaitlist(_ context.Context, _ hold.Actor, _ uuid.UUID, f func(hold.WaitlistChange)) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	id := l.next
	l.watches[id] = f
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.watches, id)
	}, nil
}

func (l *fakeLines) RenderWaitlists(ctx context.Context, _, event uuid.UUID, users []uuid.UUID) (map[uuid.UUID][]byte, []byte, error) {
	l.mu.Lock()
	l.started++
	l.mu.Unlock()
	if l.block != nil {
		select {
		case <-l.block:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, slices.Clone(users))
	if l.fail > 0 {
		l.fail--
		return nil, nil, errors.New("postgres is away")
	}
	out := map[uuid.UUID][]byte{}
	for _, u := range users {
		if p, ok := l.places[u]; ok {
			out[u] = []byte(panel(u, p))
		}
	}
	return out, []byte(`<div id="waitlist-status" data-cleared="` + event.String() + `"></div>`), nil
}

func (l *fakeLines) RenderStaffWaitlist(_ context.Context, _, event uuid.UUID) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.staff++
	return []byte(`<section id="staff-waitlist" data-event="` + event.String() + `"></section>`), nil
}

func (l *fakeLines) staffRenders() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.staff
}

func panel(user uuid.UUID, place int) string {
	return fmt.Sprintf(`<div id="waitlist-status" data-user="%s" data-place="%d"></div>`, user, place)
}

func (l *fakeLines) setPlaces(p map[uuid.UUID]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.places = p
}

// push tells every watch of a change, as the core does.
func (l *fakeLines) push(c hold.WaitlistChange) {
	l.mu.Lock()
	fs := make([]func(hold.WaitlistChange), 0, len(l.watches))
	for _, f := range l.watches {
		fs = append(fs, f)
	}
	l.mu.Unlock()
	for _, f := range fs {
		f(c)
	}
}

func (l *fakeLines) renders() [][]uuid.UUID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (l *fakeLines) startedRenders() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started
}

// readText reads the next frame that is not a seat change, within d.
func readText(t *testing.T, conn *websocket.Conn, d time.Duration) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		if !strings.HasPrefix(string(b), `<div id="seat-`) {
			return string(b)
		}
	}
}

// noPanel checks a socket got no waitlist panel: it reads up to a seat
// change sent now (the hub queued any panel before it).
func noPanel(t *testing.T, e *env, event uuid.UUID, conn *websocket.Conn) {
	t.Helper()
	seat := uuid.New()
	e.src.push(event, e.delta(event, seat, "available", 1, uuid.Nil))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		if !strings.HasPrefix(string(b), `<div id="seat-`) {
			t.Fatalf("a socket that should get no panel got %s", b)
		}
		if strings.Contains(string(b), seat.String()) {
			return
		}
	}
}

func sameUsers(a, b []uuid.UUID) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	cmp := func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) }
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

// TestWaitlistPanelsGoOnlyToTheirBuyer: when the line moves, each buyer's
// sockets get that buyer's panel from one render for all of them; a buyer
// with no entries gets nothing, unless their own entries changed (they
// left: the empty panel); a join renders only the joiner's panel, and
// nothing at all when the joiner has no socket here.
func TestWaitlistPanelsGoOnlyToTheirBuyer(t *testing.T) {
	lines := newFakeLines()
	e := newEnv(t, envOptions{waitlist: &live.WaitlistOptions{Source: lines, Renderer: lines}})
	event := uuid.New()
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	lines.setPlaces(map[uuid.UUID]int{a: 1, b: 2})
	a1, a2, bc, cc := e.dial(event, a, ""), e.dial(event, a, ""), e.dial(event, b, ""), e.dial(event, c, "")

	lines.push(hold.WaitlistChange{Line: true})
	for _, conn := range []*websocket.Conn{a1, a2} {
		if got := readText(t, conn, 5*time.Second); got != panel(a, 1) {
			t.Fatalf("a's socket got %s", got)
		}
	}
	if got := readText(t, bc, 5*time.Second); got != panel(b, 2) {
		t.Fatalf("b's socket got %s", got)
	}
	noPanel(t, e, event, cc)
	if rs := lines.renders(); len(rs) != 1 || !sameUsers(rs[0], []uuid.UUID{a, b, c}) {
		t.Fatalf("renders %v, want one for the three buyers here", rs)
	}

	// a leaves: a's sockets get the empty panel, b moves up, c gets nothing.
	lines.setPlaces(map[uuid.UUID]int{b: 1})
	lines.push(hold.WaitlistChange{Users: []uuid.UUID{a}, Line: true})
	for _, conn := range []*websocket.Conn{a1, a2} {
		if got := readText(t, conn, 5*time.Second); !strings.Contains(got, `data-cleared="`+event.String()+`"`) {
			t.Fatalf("the leaver's socket got %s", got)
		}
	}
	if got := readText(t, bc, 5*time.Second); got != panel(b, 1) {
		t.Fatalf("b's socket got %s", got)
	}
	noPanel(t, e, event, cc)

	// Joins: a buyer with no socket here costs no render; c's renders
	// only c's panel.
	before := len(lines.renders())
	lines.push(hold.WaitlistChange{Users: []uuid.UUID{uuid.New()}})
	lines.setPlaces(map[uuid.UUID]int{b: 1, c: 2})
	lines.push(hold.WaitlistChange{Users: []uuid.UUID{c}})
	if got := readText(t, cc, 5*time.Second); got != panel(c, 2) {
		t.Fatalf("the joiner's socket got %s", got)
	}
	rs := lines.renders()
	if len(rs) != before+1 || !sameUsers(rs[len(rs)-1], []uuid.UUID{c}) {
		t.Fatalf("renders after the joins %v, want one more, for c alone", rs[before:])
	}
	noPanel(t, e, event, bc)
	if n := lines.staffRenders(); n != 0 {
		t.Fatalf("%d staff panels rendered with no dashboard socket here", n)
	}
}

// TestWaitlistRendersCoalesce: changes that come while a render runs are
// rendered together once it ends: one render in flight per event, and a
// burst of a hundred changes costs two renders.
func TestWaitlistRendersCoalesce(t *testing.T) {
	lines := newFakeLines()
	lines.block = make(chan struct{})
	e := newEnv(t, envOptions{waitlist: &live.WaitlistOptions{Source: lines, Renderer: lines}})
	event := uuid.New()
	a := uuid.New()
	lines.setPlaces(map[uuid.UUID]int{a: 5})
	conn := e.dial(event, a, "")

	lines.push(hold.WaitlistChange{Line: true})
	testsvc.Eventually(t, 5*time.Second, "a render started", func() bool { return lines.startedRenders() > 0 })
	for range 100 {
		lines.push(hold.WaitlistChange{Users: []uuid.UUID{uuid.New()}, Line: true})
	}
	close(lines.block)
	for range 2 {
		if got := readText(t, conn, 5*time.Second); got != panel(a, 5) {
			t.Fatalf("got %s", got)
		}
	}
	rs := lines.renders()
	if len(rs) != 2 || lines.startedRenders() != 2 {
		t.Fatalf("%d renders (%d started) for a burst, want 2", len(rs), lines.startedRenders())
	}
	// Only buyers with a socket here are asked for.
	if !sameUsers(rs[1], []uuid.UUID{a}) {
		t.Fatalf("second render asked for %v", rs[1])
	}
}

// TestWaitlistFailedRenderIsRetried: a render that fails (Postgres away)
// is tried again with the changes kept, so the panel still arrives.
func TestWaitlistFailedRenderIsRetried(t *testing.T) {
	lines := newFakeLines()
	lines.fail = 1
	e := newEnv(t, envOptions{waitlist: &live.WaitlistOptions{Source: lines, Renderer: lines, Retry: 20 * time.Millisecond}})
	event := uuid.New()
	a, b := uuid.New(), uuid.New()
	lines.setPlaces(map[uuid.UUID]int{b: 1})
	ac, bc := e.dial(event, a, ""), e.dial(event, b, "")
	lines.push(hold.WaitlistChange{Users: []uuid.UUID{a}, Line: true})
	if got := readText(t, bc, 5*time.Second); got != panel(b, 1) {
		t.Fatalf("b's socket got %s", got)
	}
	if got := readText(t, ac, 5*time.Second); !strings.Contains(got, "data-cleared") {
		t.Fatalf("the leaver's socket got %s after the retry", got)
	}
	if rs := lines.renders(); len(rs) != 2 {
		t.Fatalf("%d renders, want the failed one and its retry", len(rs))
	}
}

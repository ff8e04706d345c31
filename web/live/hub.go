package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// errClosed is returned to Serve calls that arrive after Shutdown began.
var errClosed = errors.New("live: hub is shut down")

// topicKey is one event of one organization: the unit of subscription.
type topicKey struct{ org, event uuid.UUID }

// Hub keeps the sockets of this process and pushes rendered seat changes to
// them. Create one per process with New; it is safe for concurrent use.
//
// Unlike the gorilla chat example, no single hub goroutine owns the client
// set; mutexes guard it, held only for map updates and non-blocking channel
// sends. Two reasons. The function given to Source.Watch runs on whatever
// goroutine committed the change, often a buyer's hold request, and must
// never block: handing deltas to a hub goroutine over a channel would block
// whenever that goroutine is busy. And Watch may load the event from
// Postgres; run on a hub goroutine it would stall every other event's
// clients meanwhile. Instead each watched event has its own goroutine (the
// pump) that renders its changes and fans them out, and the watch function
// only adds deltas to the event's pending set and wakes the pump. A busy
// event never delays another, and a slow client never delays anyone: a
// client whose queue is full is dropped.
type Hub struct {
	src Source
	r   Renderer
	log *slog.Logger
	opt Options
	up  websocket.Upgrader

	// ctx lives as long as the hub: it is the parent of every client's
	// context and of the watches, and Shutdown cancels it with CodeRestart
	// as the cause.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wg counts every goroutine the hub starts and every Serve in
	// progress, so Shutdown can wait for all of them.
	wg      sync.WaitGroup
	dropped atomic.Uint64
	refused atomic.Uint64
	watches atomic.Int64
	metrics *hubMetrics

	mu       sync.Mutex // guards the fields below; taken before topic.mu
	closed   bool
	staff    *StaffOptions    // nil until EnableStaff
	waitlist *WaitlistOptions // nil until EnableWaitlist
	door     *DoorOptions     // nil until EnableDoor
	topics   map[topicKey]*topic
	sessions map[string]map[*client]struct{}
	clients  int // joined to a topic
	// users and networks count the joined sockets per account and per
	// address prefix, for MaxPerUser and MaxPerNetwork.
	users    map[uuid.UUID]int
	networks map[string]int
}

// New returns a hub that watches events on src and renders with r. log may
// be nil.
func New(src Source, r Renderer, log *slog.Logger, opts Options) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Hub{
		src: src, r: r, log: log, opt: opts.withDefaults(),
		up: websocket.Upgrader{
			// Idle sockets hold no write buffer between frames.
			WriteBufferPool: &sync.Pool{},
			// Serve's caller checks the Origin (see SameOrigin); the
			// upgrader cannot, as it does not know the route's policy.
			CheckOrigin: func(*http.Request) bool { return true },
		},
		ctx: ctx, cancel: cancel,
		metrics:  newHubMetrics(),
		topics:   map[topicKey]*topic{},
		sessions: map[string]map[*client]struct{}{},
		users:    map[uuid.UUID]int{},
		networks: map[string]int{},
	}
}

// EnableStaff turns on the staff streams (StreamDashboard,
// StreamBoxOffice) and, if o.Notice is set, notices to buyers whose hold
// someone else released. Call it once, before the first Serve; events
// already watched keep their old settings.
func (h *Hub) EnableStaff(o StaffOptions) {
	if o.Renderer == nil {
		panic("live: EnableStaff without a Renderer")
	}
	o = o.withDefaults()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.staff = &o
}

// EnableWaitlist turns on live waitlist panels on seat-map sockets: on
// every change of an event's line, each buyer connected here with entries
// in it is sent their own panel. Call it once, before the first Serve;
// events already watched keep their old settings.
func (h *Hub) EnableWaitlist(o WaitlistOptions) {
	if o.Source == nil || o.Renderer == nil {
		panic("live: EnableWaitlist without a Source or Renderer")
	}
	o = o.withDefaults()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waitlist = &o
}

// Serve upgrades the request to a WebSocket and streams the changes of
// v.Event to it until the browser leaves, the client falls behind, its
// session is closed or the hub shuts down. It returns once the socket is
// running; the socket's reader and writer goroutines belong to the hub.
//
// The caller MUST have authenticated the session, checked the Origin (see
// SameOrigin) and checked that v.Event belongs to v.Actor.Org: Serve
// accepts any Origin.
//
// Nothing is replayed on connect: a change committed after the page was
// rendered but before the socket joined is never sent to it. The browser
// should therefore fetch the seat map fragment again once the socket is
// open (on the first connect too, not only on reconnects); fragments carry
// versions, so overlap is harmless.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, v Viewer) {
	if v.Stream.Staff() && !staffRole(v.Actor.Role) {
		// The route checks roles too; this keeps a mistake there from ever
		// sending holders' details to a buyer.
		http.Error(w, http.StatusText(http.StatusForbidden), http.StatusForbidden)
		return
	}
	if v.Stream >= numStreams || (v.Stream.Staff() && !h.staffEnabled()) {
		http.Error(w, http.StatusText(http.StatusNotFound), http.StatusNotFound)
		return
	}
	if !h.enter() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}
	defer h.wg.Done()

	c := h.newClient(v)
	// Join before upgrading: a failed watch can still be answered with an
	// HTTP status, and no change is missed between the upgrade and the
	// watch (frames wait in the client's queue).
	if err := h.join(c); err != nil {
		var ce *closeError
		if errors.As(err, &ce) {
			// Over a cap: answered with a close frame rather than an HTTP
			// status, which browsers do not show to the page's script.
			c.cancel(err)
			h.refuse(w, r, ce)
			return
		}
		// Not an error worth logging if the hub is shutting down or the
		// session was closed meanwhile.
		if !errors.Is(err, errClosed) && c.ctx.Err() == nil {
			h.log.Error("live: watch event", "org", v.Actor.Org, "event", v.Event, "err", err)
		}
		c.cancel(err)
		h.leave(c)
		http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}
	conn, err := h.up.Upgrade(w, r, nil)
	if err != nil {
		// Upgrade has answered the request.
		c.cancel(err)
		h.leave(c)
		return
	}
	c.conn = conn
	// However the client ends, its context is cancelled (by the reader on
	// exit at the latest), and then the socket is closed exactly once.
	h.wg.Add(1)
	context.AfterFunc(c.ctx, func() {
		defer h.wg.Done()
		c.shut()
	})
	h.wg.Go(func() { h.read(c) })
	h.wg.Go(func() { h.write(c) })
}

func (h *Hub) staffEnabled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.staff != nil
}

// enter admits a Serve call unless the hub is shut down. Counting it in wg
// under mu keeps every wg.Add from zero ordered before Shutdown's Wait.
func (h *Hub) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(1)
	return true
}

// join adds c to its event's topic, starting the watch if c is the first
// client of the event in this process, and waits until the watch is up.
// On error the caller must still call leave.
func (h *Hub) join(c *client) error {
	key := topicKey{c.v.Actor.Org, c.v.Event}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errClosed
	}
	if h.opt.MaxClients > 0 && h.clients >= h.opt.MaxClients {
		h.mu.Unlock()
		h.refused.Add(1)
		return &closeError{CodeTooMany, "server has too many live connections"}
	}
	if tok := c.v.SessionToken; tok != "" && h.opt.MaxPerSession > 0 && len(h.sessions[tok]) >= h.opt.MaxPerSession {
		h.mu.Unlock()
		h.refused.Add(1)
		return &closeError{CodeTooMany, "too many live connections for this session"}
	}
	if h.opt.MaxPerUser > 0 && h.users[c.v.Actor.User] >= h.opt.MaxPerUser {
		h.mu.Unlock()
		h.refused.Add(1)
		return &closeError{CodeTooMany, "too many live connections for this account"}
	}
	if n := c.v.Network; n != "" && h.opt.MaxPerNetwork > 0 && h.networks[n] >= h.opt.MaxPerNetwork {
		h.mu.Unlock()
		h.refused.Add(1)
		return &closeError{CodeTooMany, "too many live connections from this network"}
	}
	h.clients++
	h.users[c.v.Actor.User]++
	if n := c.v.Network; n != "" {
		h.networks[n]++
	}
	t, ok := h.topics[key]
	if !ok {
		t = newTopic(key, h.staff, h.waitlist, h.door)
		h.topics[key] = t
	}
	c.topic = t
	t.add(c)
	if tok := c.v.SessionToken; tok != "" {
		if h.sessions[tok] == nil {
			h.sessions[tok] = map[*client]struct{}{}
		}
		h.sessions[tok][c] = struct{}{}
	}
	h.mu.Unlock()

	if ok {
		select {
		case <-t.ready:
			return t.err
		case <-c.ctx.Done():
			return context.Cause(c.ctx)
		}
	}
	// Watch outside the lock: it may load the event from Postgres. The
	// topic cannot empty meanwhile, since c is in it and leaves only after
	// join returns. The hub's context, not the request's, bounds the load:
	// the watch serves every later client too.
	cancel, err := h.src.Watch(h.ctx, c.v.Actor, c.v.Event, t.push)
	if err == nil && t.wl != nil {
		var stopLine func()
		if stopLine, err = t.wl.Source.WatchWaitlist(h.ctx, c.v.Actor, c.v.Event, t.pushLine); err != nil {
			cancel()
		} else {
			stopSeats := cancel
			cancel = func() {
				stopSeats()
				stopLine()
			}
		}
	}
	if err == nil && t.door != nil {
		var stopDoor func()
		if stopDoor, err = t.door.Source.WatchAdmissions(h.ctx, c.v.Actor, c.v.Event, t.pushDoor); err != nil {
			cancel()
		} else {
			stopRest := cancel
			cancel = func() {
				stopRest()
				stopDoor()
			}
		}
	}
	if err != nil {
		t.start(nil, err)
		// Forget the failed topic so the next client tries again.
		h.mu.Lock()
		if h.topics[key] == t {
			delete(h.topics, key)
		}
		h.mu.Unlock()
		return err
	}
	h.watches.Add(1)
	t.start(func() {
		cancel()
		h.watches.Add(-1)
	}, nil)
	h.wg.Go(func() { h.pump(t) })
	if t.staff != nil {
		h.wg.Go(func() { h.staffPump(t) })
	}
	if t.wl != nil {
		h.wg.Go(func() { h.retryPump(t, t.lwake, t.wl.Retry, h.flushLine) })
	}
	if t.door != nil {
		h.wg.Go(func() { h.retryPump(t, t.dwake, t.door.Retry, h.flushDoor) })
	}
	return nil
}

// leave removes c from its topic; after the topic's last client it stops
// the topic and cancels its watch. It is idempotent.
func (h *Hub) leave(c *client) {
	t := c.topic
	if t == nil {
		return
	}
	h.mu.Lock()
	removed, last := t.remove(c)
	if removed {
		h.clients--
		if h.users[c.v.Actor.User]--; h.users[c.v.Actor.User] <= 0 {
			delete(h.users, c.v.Actor.User)
		}
		if n := c.v.Network; n != "" {
			if h.networks[n]--; h.networks[n] <= 0 {
				delete(h.networks, n)
			}
		}
		if tok := c.v.SessionToken; tok != "" {
			delete(h.sessions[tok], c)
			if len(h.sessions[tok]) == 0 {
				delete(h.sessions, tok)
			}
		}
	}
	if last && h.topics[t.key] == t {
		delete(h.topics, t.key)
	}
	h.mu.Unlock()
	if last {
		t.stop()
	}
}

// drop ends a client that cannot keep up. Only the topic's pump calls it.
func (h *Hub) drop(c *client) {
	if c.ctx.Err() != nil {
		return
	}
	c.cancel(&closeError{CodeTooSlow, "too slow"})
	h.dropped.Add(1)
	h.log.Info("live: dropped slow client", "org", c.v.Actor.Org, "event", c.v.Event, "user", c.v.Actor.User)
}

// CloseSession closes every socket opened with the session token, with
// CodeSessionEnded; call it at logout. An empty token closes nothing.
func (h *Hub) CloseSession(token string) {
	if token == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.sessions[token] {
		c.cancel(&closeError{CodeSessionEnded, "session ended"})
	}
}

// RecheckSessions makes every socket tied to a session ask
// Options.SessionExpiry whether its session still exists: call it when
// session-end messages may have been missed.
func (h *Hub) RecheckSessions() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cs := range h.sessions {
		for c := range cs {
			select {
			case c.recheck <- struct{}{}:
			default:
			}
		}
	}
}

// refuse upgrades the request only to close the socket at once with ce:
// browsers learn why from the close frame.
func (h *Hub) refuse(w http.ResponseWriter, r *http.Request, ce *closeError) {
	conn, err := h.up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the request.
	}
	msg := websocket.FormatCloseMessage(ce.code, ce.text)
	_ = conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeGrace))
	_ = conn.Close()
}

// Shutdown refuses new sockets, closes every socket with CodeRestart so
// browsers reconnect to another process, cancels every watch, and waits
// until all of the hub's goroutines have returned or ctx ends.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel(&closeError{CodeRestart, "server restarting"})
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("live: shutdown: %w", context.Cause(ctx))
	}
}

// Stats is a snapshot of a hub, for metrics and tests.
type Stats struct {
	// Clients is the number of sockets joined to an event.
	Clients int
	// Events is the number of clients per event, for events with any.
	Events map[uuid.UUID]int
	// Watches is the number of Source watches currently open.
	Watches int
	// Dropped counts clients dropped for being too slow since New.
	Dropped uint64
	// Refused counts sockets refused for a cap (MaxClients,
	// MaxPerSession) since New.
	Refused uint64
	// Staff is the number of those sockets on staff streams.
	Staff int
}

// Stats returns the hub's current numbers.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Stats{Events: make(map[uuid.UUID]int, len(h.topics)),
		Watches: int(h.watches.Load()), Dropped: h.dropped.Load(), Refused: h.refused.Load()}
	for k, t := range h.topics {
		if n, staff := t.size(); n > 0 {
			s.Events[k.event] += n
			s.Clients += n
			s.Staff += staff
		}
	}
	return s
}

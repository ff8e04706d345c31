// Package notify is a process's one Postgres LISTEN connection. Jobs ask
// for the channels they need (Listen); the notifier keeps every asked-for
// channel LISTENed on a single dedicated connection and hands each
// notification to the handlers of its channel. Notifications sent while
// nobody listened are lost for good, so after every (re)connect the
// notifier tells the jobs (OnReady) and each resyncs from the source it
// keeps a cursor into. The design follows river's internal/notifier.
package notify

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Settings of the connection loop.
const (
	// connectTimeout bounds one attempt to connect and LISTEN.
	connectTimeout = 10 * time.Second
	// pingEvery is how long the connection may stay silent before it is
	// checked: a peer gone without a word (a cut network) must not leave
	// the notifier waiting on a dead socket.
	pingEvery = 30 * time.Second
	// pingTimeout bounds that check.
	pingTimeout = 5 * time.Second
	// retryFirst and retryMax bound the pause between connection attempts,
	// doubled per failure in between.
	retryFirst, retryMax = 250 * time.Millisecond, 5 * time.Second
	// maxQueued bounds the notifications a subscriber has not handled yet.
	// A subscriber that falls this far behind misses notifications: the
	// notifier then reconnects, so every subscriber resyncs (OnReady).
	maxQueued = 10_000
)

// Notifier owns the LISTEN connection of one process. Listen and OnReady
// may be called at any time, before or while Run runs; Run runs once at a
// time.
type Notifier struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	log     *slog.Logger

	mu     sync.Mutex
	subs   map[string]map[*subscription]struct{}
	ready  map[int]func()
	due    map[int]func() // ready callbacks registered while connected, not run yet
	nextID int
	// dirty: subscriptions or ready callbacks changed since the loop last
	// brought the connection in line.
	dirty bool
	// interrupt ends the loop's current wait (nil while not waiting).
	interrupt context.CancelFunc
	connected bool
	run       *running // nil while Run is not running

	pid atomic.Uint32 // the connection's backend, for tests
}

// running is one Run's state: the subscribers' delivery goroutines run
// under its context and WaitGroup.
type running struct {
	ctx context.Context
	wg  sync.WaitGroup
}

// New returns a notifier whose connection is made from cfg (the pool's
// connection settings, so it reaches Postgres the way every query does).
func New(cfg *pgx.ConnConfig, log *slog.Logger) *Notifier {
	return &Notifier{
		connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg.Copy()) },
		log:     log, subs: map[string]map[*subscription]struct{}{}, ready: map[int]func(){}, due: map[int]func(){},
	}
}

// subscription is one handler of a channel with its queue: a handler
// runs on a goroutine of its own, so a slow one delays nobody else.
type subscription struct {
	channel string
	fn      func(payload string)
	wake    chan struct{} // buffered: a pending delivery

	mu     sync.Mutex
	queue  []string
	gone   bool
	behind bool // overflowed; nothing is queued until the next connection
}

// Listen calls fn with the payload of every notification on channel, in
// the order Postgres sent them, until unlisten is called. Notifications
// are heard from the moment the live connection LISTENs to channel; a job
// that must know when that is registers an OnReady after Listen.
func (n *Notifier) Listen(channel string, fn func(payload string)) (unlisten func()) {
	s := &subscription{channel: channel, fn: fn, wake: make(chan struct{}, 1)}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.subs[channel] == nil {
		n.subs[channel] = map[*subscription]struct{}{}
	}
	n.subs[channel][s] = struct{}{}
	if n.run != nil {
		n.deliver(n.run, s)
	}
	n.changed()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			delete(n.subs[channel], s)
			if len(n.subs[channel]) == 0 {
				delete(n.subs, channel)
				n.changed()
			}
			s.mu.Lock()
			s.gone = true
			s.queue = nil
			s.mu.Unlock()
			s.poke()
		})
	}
}

// OnReady calls fn each time the connection LISTENs to every channel
// asked for: after each (re)connect, and once soon after OnReady when
// the connection is up already (after the LISTENs of the Listen calls
// made before it). Whatever was sent on a channel before then was not
// heard, so fn starts the subscriber's resync. It runs on the connection
// loop: it must not block (it kicks a loop, or drops a cache).
func (n *Notifier) OnReady(fn func()) (remove func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextID++
	id := n.nextID
	n.ready[id] = fn
	if n.connected {
		n.due[id] = fn
		n.changed()
	}
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.ready, id)
		delete(n.due, id)
	}
}

// changed asks the loop to bring the connection in line. Called with mu
// held.
func (n *Notifier) changed() {
	n.dirty = true
	if n.interrupt != nil {
		n.interrupt()
	}
}

// deliver starts s's delivery goroutine under r. Called with mu held.
func (n *Notifier) deliver(r *running, s *subscription) {
	r.wg.Go(func() {
		for {
			select {
			case <-r.ctx.Done():
				return
			case <-s.wake:
			}
			for {
				s.mu.Lock()
				if s.gone {
					s.mu.Unlock()
					return
				}
				if len(s.queue) == 0 {
					s.queue = nil // let a burst's backing array go
					s.mu.Unlock()
					break
				}
				p := s.queue[0]
				s.queue = s.queue[1:]
				s.mu.Unlock()
				s.fn(p)
			}
		}
	})
}

func (s *subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// push queues a payload; false if s is too far behind to take it.
func (s *subscription) push(p string) bool {
	s.mu.Lock()
	switch {
	case s.gone:
	case s.behind || len(s.queue) >= maxQueued:
		s.behind = true
		s.mu.Unlock()
		return false
	default:
		s.queue = append(s.queue, p)
	}
	s.mu.Unlock()
	s.poke()
	return true
}

// Run keeps the connection until ctx ends: connects, LISTENs, delivers
// notifications, and after a failure connects again (backing off up to
// retryMax). It returns once the connection is closed and every handler
// call has returned.
func (n *Notifier) Run(ctx context.Context) {
	r := &running{ctx: ctx}
	n.mu.Lock()
	n.run = r
	for _, subs := range n.subs {
		for s := range subs {
			n.deliver(r, s)
		}
	}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.run = nil
		n.mu.Unlock()
		r.wg.Wait()
	}()

	wait := retryFirst
	for {
		up, err := n.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if up {
			wait = retryFirst
		}
		n.log.Warn("postgres notifications: not listening, connecting again", "err", err, "in", wait)
		jitter := time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64())) // #nosec G404 -- spreading reconnects needs no secrecy
		select {
		case <-ctx.Done():
			return
		case <-time.After(jitter):
		}
		wait = min(2*wait, retryMax)
	}
}

var errBehind = errors.New("a subscriber fell behind: notifications were dropped")

// session is one connection's life: connect, LISTEN, run the ready
// callbacks, then deliver until the connection fails or ctx ends. up
// reports whether it got as far as LISTENing.
func (n *Notifier) session(ctx context.Context) (up bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := n.connect(cctx)
	cancel()
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	n.pid.Store(conn.PgConn().PID())
	listening := map[string]bool{}
	n.mu.Lock()
	n.dirty = false
	n.mu.Unlock()
	if err := n.sync(ctx, conn, listening); err != nil {
		return false, err
	}
	n.mu.Lock()
	n.connected = true
	clear(n.due)
	fns := make([]func(), 0, len(n.ready))
	for _, f := range n.ready {
		fns = append(fns, f)
	}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.connected = false
		n.mu.Unlock()
	}()
	n.resume()
	for _, f := range fns {
		f()
	}

	for {
		n.mu.Lock()
		if n.dirty {
			n.dirty = false
			due := make([]func(), 0, len(n.due))
			for _, f := range n.due {
				due = append(due, f)
			}
			clear(n.due)
			n.mu.Unlock()
			if err := n.sync(ctx, conn, listening); err != nil {
				return true, err
			}
			for _, f := range due {
				f()
			}
			continue
		}
		wctx, stop := context.WithTimeout(ctx, pingEvery)
		n.interrupt = stop
		n.mu.Unlock()
		msg, err := conn.WaitForNotification(wctx)
		n.mu.Lock()
		n.interrupt = nil
		n.mu.Unlock()
		timedOut := errors.Is(wctx.Err(), context.DeadlineExceeded)
		ended := wctx.Err() != nil
		stop()
		switch {
		case err == nil:
			if !n.dispatch(msg.Channel, msg.Payload) {
				return true, errBehind
			}
		case ctx.Err() != nil:
			return true, ctx.Err()
		case !ended:
			return true, err // the connection failed
		case timedOut:
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return true, err
			}
		}
		// Otherwise the wait was interrupted: the loop syncs at its top.
	}
}

// sync LISTENs to every channel someone listens to and UNLISTENs the
// others, in one round trip.
func (n *Notifier) sync(ctx context.Context, conn *pgx.Conn, listening map[string]bool) error {
	n.mu.Lock()
	var add, drop []string
	for ch := range n.subs {
		if !listening[ch] {
			add = append(add, ch)
		}
	}
	for ch := range listening {
		if _, ok := n.subs[ch]; !ok {
			drop = append(drop, ch)
		}
	}
	n.mu.Unlock()
	if len(add)+len(drop) == 0 {
		return nil
	}
	var sql strings.Builder
	for _, ch := range add {
		sql.WriteString("LISTEN " + pgx.Identifier{ch}.Sanitize() + ";")
	}
	for _, ch := range drop {
		sql.WriteString("UNLISTEN " + pgx.Identifier{ch}.Sanitize() + ";")
	}
	sctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if _, err := conn.Exec(sctx, sql.String()); err != nil {
		return err
	}
	for _, ch := range add {
		listening[ch] = true
	}
	for _, ch := range drop {
		delete(listening, ch)
	}
	return nil
}

// dispatch queues a notification for every handler of its channel, and
// reports false if one of them was too far behind to take it.
func (n *Notifier) dispatch(channel, payload string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	ok := true
	for s := range n.subs[channel] {
		if !s.push(payload) {
			n.log.Warn("postgres notifications: a handler fell behind, resyncing everyone", "channel", channel)
			ok = false
		}
	}
	return ok
}

// resume lets subscribers that fell behind queue again: the ready
// callbacks about to run resync them.
func (n *Notifier) resume() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, subs := range n.subs {
		for s := range subs {
			s.mu.Lock()
			s.behind = false
			s.mu.Unlock()
		}
	}
}

// Package gate bounds how many of an expensive operation run at once in
// a process: up to n inside, up to a few more waiting a short while, and
// everyone else refused at once with a hint of when to come back. It is
// for work whose memory or CPU grows with its input and which a client
// can ask for repeatedly — reading and decoding a chart upload (up to 32
// MiB, see chart.DecodeJSON), or hashing a password — so that a burst of
// them queues briefly instead of taking the process down, and the rest of
// the process (holds) keeps its share.
//
// Wiring it in an HTTP handler (one Gate per kind of work, made at start
// with its settings, e.g. gate.New(cfg.ChartUploads, 5*time.Second,
// 4*cfg.ChartUploads) for chart uploads):
//
//	leave, err := uploads.Enter(r.Context())
//	if err != nil {
//		return err // *gate.Busy: 503 Unavailable; set Retry-After from it
//	}
//	defer leave()
//	// read the body, decode, validate...
//
// The error is an apperr Unavailable (503) wrapped in a *Busy: the one
// error table (web/httpx) maps the code as for any domain error, and
// answers Retry-After with Busy.RetryAfter, as for a rate limit's refusal.
//
// A request whose context ends while it waits gets ctx's error instead
// (the client went away: nothing to answer).
package gate

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"seatd/internal/apperr"
)

// Gate lets at most n callers in at once. Safe for concurrent use.
type Gate struct {
	slots   chan struct{}
	wait    time.Duration // longest wait for a place
	queue   int64         // most callers waiting at once
	waiting atomic.Int64
	now     func() time.Time

	mu   sync.Mutex
	held time.Duration // moving average of how long a caller stays inside
}

// New returns a gate of n places (at least 1) where up to queue callers
// wait at most wait for one; the others are refused at once.
func New(n int, wait time.Duration, queue int) *Gate {
	return &Gate{slots: make(chan struct{}, max(n, 1)), wait: wait, queue: int64(max(queue, 0)), now: time.Now}
}

// Busy is the refusal of a full gate: an apperr Unavailable (503), and
// how long to wait before trying again.
type Busy struct {
	Wait time.Duration // how long the callers ahead should take
	err  *apperr.Error
}

func (b *Busy) Error() string { return b.err.Error() }

// Unwrap makes apperr.CodeOf and errors.As find the apperr error.
func (b *Busy) Unwrap() error { return b.err }

// RetryAfter is Wait in whole seconds, rounded up, at least 1: the value
// of a Retry-After header.
func (b *Busy) RetryAfter() int { return max(1, int(math.Ceil(b.Wait.Seconds()))) }

// Enter takes a place, waiting for one up to the gate's wait if the
// queue has room. leave gives the place back (call it once, when the work
// is done). err is a *Busy when the gate stays full, ctx's error when ctx
// ends first.
func (g *Gate) Enter(ctx context.Context) (leave func(), err error) {
	select {
	case g.slots <- struct{}{}:
		return g.leave(), nil
	default:
	}
	if g.waiting.Add(1) > g.queue {
		g.waiting.Add(-1)
		return nil, g.busy()
	}
	defer g.waiting.Add(-1)
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return g.leave(), nil
	case <-t.C:
		return nil, g.busy()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Waiting is how many callers wait for a place now (for a gauge).
func (g *Gate) Waiting() int { return int(g.waiting.Load()) }

// leave is the release of a place taken now.
func (g *Gate) leave() func() {
	start := g.now()
	var once sync.Once
	return func() {
		once.Do(func() {
			d := g.now().Sub(start)
			g.mu.Lock()
			// A moving average over the last ten or so: it follows a change
			// in the work within seconds, and one outlier moves it little.
			g.held += (d - g.held) / 8
			g.mu.Unlock()
			<-g.slots
		})
	}
}

// busy is the refusal, with a hint: the time for the callers inside and
// those waiting to take their turns, by how long a turn takes lately, and
// at least a second.
func (g *Gate) busy() *Busy {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	ahead := float64(g.waiting.Load()+int64(cap(g.slots))) / float64(cap(g.slots))
	return &Busy{
		err:  apperr.E(apperr.Unavailable, "too many of these requests are being served right now; try again shortly"),
		Wait: max(time.Second, time.Duration(float64(held)*ahead)),
	}
}

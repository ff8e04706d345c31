package hold

// Waiting for the cache to catch up: a request that found the hot cache
// behind Postgres asks the follower for a round and waits for one that
// read the feed after it asked.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// catchUps pairs the requests waiting for a follower round with the
// rounds that serve them: a request takes a ticket (asked), and a round
// serves every ticket taken before it began reading the feed. So one round
// serves every request that asked while the one before it ran: a crowd of
// requests costs one round, not one each.
type catchUps struct {
	tickets atomic.Uint64

	mu     sync.Mutex
	served uint64
	done   chan struct{} // closed, and replaced, when served moves
}

// ask takes a ticket.
func (c *catchUps) ask() uint64 { return c.tickets.Add(1) }

// begin is called by a round before it reads the feed: the tickets it
// will serve.
func (c *catchUps) begin() uint64 { return c.tickets.Load() }

// serve tells the requests holding tickets up to n that a round read the
// feed after they asked.
func (c *catchUps) serve(n uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= c.served {
		return
	}
	c.served = n
	if c.done != nil {
		close(c.done)
		c.done = nil
	}
}

// wait waits until ticket n is served, for at most d; it reports whether
// it was.
func (c *catchUps) wait(ctx context.Context, n uint64, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		c.mu.Lock()
		if c.served >= n {
			c.mu.Unlock()
			return true
		}
		if c.done == nil {
			c.done = make(chan struct{})
		}
		done := c.done
		c.mu.Unlock()
		select {
		case <-done:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// catchUp asks the follower for a round now and waits, at most d, for one
// that read the change feed after the call began: then the hot caches
// have every change committed before it. It reports whether one did (no
// follower running, or a slow round, is not an error: the cache still
// only chooses, and Redis and Postgres decide).
func (e *Engine) catchUp(ctx context.Context, d time.Duration) bool {
	n := e.caught.ask()
	e.wake()
	return e.caught.wait(ctx, n, d)
}

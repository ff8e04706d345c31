// Package coalesce runs concurrent requests together: one round trip for
// many callers. It adds no delay: a request that finds a slot free goes
// at once, alone; only while every slot is busy do requests queue, and
// the next free slot takes up to max of them together. So the batch size
// follows the load. The hold statement of Postgres and the lock script of
// Redis are both sent this way.
package coalesce

import (
	"context"
	"slices"
	"sync"
)

// Call is one request in a batch; run answers it exactly once.
type Call[Req, Res any] struct {
	Req   Req
	done  chan Res // buffered: run never waits
	taken bool     // in a batch already; guarded by Batcher.mu
}

// Answer gives the call its result.
func (c *Call[Req, Res]) Answer(r Res) { c.done <- r }

// Batcher coalesces calls into batches of at most max, at most slots
// batches at once.
type Batcher[Req, Res any] struct {
	max   int
	slots chan struct{}
	// run sends one batch and answers each of its calls. It runs on the
	// goroutine of one of the callers, which waits for it.
	run func(ctx context.Context, batch []*Call[Req, Res])

	// keys, when set (Apart), names what a request's batch will lock:
	// batches in flight at once never share a key.
	keys func(Req) []uint64

	mu    sync.Mutex
	queue []*Call[Req, Res]
	busy  map[uint64]bool // keys of the batches in flight
	freed chan struct{}   // closed (and replaced) when a batch in flight ends
}

// New returns a Batcher sending batches with run.
func New[Req, Res any](slots, size int, run func(ctx context.Context, batch []*Call[Req, Res])) *Batcher[Req, Res] {
	return &Batcher[Req, Res]{max: size, slots: make(chan struct{}, max(slots, 1)), run: run,
		busy: map[uint64]bool{}, freed: make(chan struct{})}
}

// Apart keeps batches that would wait on each other out of flight
// together: a request is taken only into a batch whose keys no other
// batch in flight has (requests of one batch may share keys). Two
// transactions that lock one row run one after the other anyway, each
// holding its slot while it waits; kept apart, the second slot runs what
// does not need that row instead. Call it before the first Do.
func (b *Batcher[Req, Res]) Apart(keys func(Req) []uint64) { b.keys = keys }

// Do sends req, batched with whatever else is waiting, and returns its
// answer. It returns ctx's error only when req was withdrawn before any
// batch took it: once sent, its outcome must be known whatever the
// caller's deadline, or a change that was made would look failed.
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	c := &Call[Req, Res]{Req: req, done: make(chan Res, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	for {
		select {
		case r := <-c.done:
			return r, nil
		case b.slots <- struct{}{}:
			// This goroutine sends what is queued: its own call, unless
			// another sender took it already, and others'.
			batch, keys, freed := b.take()
			if len(batch) > 0 {
				b.run(ctx, batch)
				b.end(keys)
			}
			<-b.slots
			b.mu.Lock()
			taken := c.taken
			b.mu.Unlock()
			if taken {
				// In this batch or another one: only its answer is left.
				return <-c.done, nil
			}
			if len(batch) == 0 {
				// Everything queued, this call too, shares a key with a
				// batch in flight (Apart): trying again before one ends
				// would only spin.
				select {
				case r := <-c.done:
					return r, nil
				case <-freed:
				case <-ctx.Done():
				}
			}
		case <-ctx.Done():
			if b.withdraw(c) {
				var zero Res
				return zero, ctx.Err()
			}
			return <-c.done, nil
		}
	}
}

func (b *Batcher[Req, Res]) take() (batch []*Call[Req, Res], keys []uint64, freed chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keys == nil {
		n := min(len(b.queue), b.max)
		batch = b.queue[:n:n]
		b.queue = append([]*Call[Req, Res](nil), b.queue[n:]...)
	} else {
		// In queue order, each call whose keys no batch in flight has;
		// the rest stay queued, in order, for a later batch.
		mine := map[uint64]bool{}
		rest := make([]*Call[Req, Res], 0, len(b.queue))
		for _, c := range b.queue {
			ks := b.keys(c.Req)
			if len(batch) == b.max || slices.ContainsFunc(ks, func(k uint64) bool { return b.busy[k] && !mine[k] }) {
				rest = append(rest, c)
				continue
			}
			batch = append(batch, c)
			for _, k := range ks {
				if !mine[k] {
					mine[k] = true
					keys = append(keys, k)
				}
			}
		}
		b.queue = rest
		for _, k := range keys {
			b.busy[k] = true
		}
	}
	for _, c := range batch {
		c.taken = true
	}
	return batch, keys, b.freed
}

// end frees the keys of a batch that has run and wakes the callers
// whose calls waited on them.
func (b *Batcher[Req, Res]) end(keys []uint64) {
	if b.keys == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		delete(b.busy, k)
	}
	close(b.freed)
	b.freed = make(chan struct{})
}

func (b *Batcher[Req, Res]) withdraw(c *Call[Req, Res]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == c {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

// Pause takes every slot, so calls queue until resume is called: a test
// gathers a batch of known calls this way.
func (b *Batcher[Req, Res]) Pause() (resume func()) {
	for range cap(b.slots) {
		b.slots <- struct{}{}
	}
	return func() {
		for range cap(b.slots) {
			<-b.slots
		}
	}
}

// Queued says how many calls wait for a slot.
func (b *Batcher[Req, Res]) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

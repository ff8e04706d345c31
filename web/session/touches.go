package session

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"seatd/internal/store"
)

// Touch settings.
const (
	// touchEvery is how often the collected touches are written. A touch
	// is housekeeping that may trail its request: the stored expiry then
	// lags the idle deadline by up to the store's touch plus this, and a
	// device's last-seen time by this.
	touchEvery = time.Second
	// touchBatch bounds the sessions of one statement; that many waiting
	// are written at once, without waiting for the tick.
	touchBatch = 500
	// touchMax bounds the sessions waiting (Postgres unreachable): past
	// it, new touches are dropped and counted in the log. A dropped
	// touch costs a stale last-seen time, or a stored expiry that trails
	// the idle deadline until the session's next change.
	touchMax = sessionCacheMax
)

// spread is d stretched by up to a half, by an amount fixed for token:
// the housekeeping of sessions that began together (a waiting room
// filling before its opening) comes due over half a period rather than
// in one wave, and each session's stays regular.
func spread(token string, d time.Duration) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(token)) // never fails
	return d + time.Duration(float64(d/2)*float64(h.Sum32())/(1<<32))
}

// touches collects the sessions' housekeeping (a later expiry of data
// that did not change, the last-seen time and address) and writes it,
// many sessions to one statement (store.Devices.Touch), every touchEvery
// or as soon as touchBatch are waiting. A request does not wait for it:
// a crowd whose sessions all come due at once (a waiting room a minute
// after it filled) costs a few statements a second, whatever the number
// of requests. Run writes; what is waiting when it stops is written
// before it returns.
type touches struct {
	st  DeviceStore
	log *slog.Logger

	mu      sync.Mutex
	due     map[string]store.SessionTouch // by token, merged
	dropped int                           // since the last write
	full    chan struct{}                 // touchBatch are waiting
}

func newTouches(st DeviceStore, log *slog.Logger) *touches {
	return &touches{st: st, log: log, due: map[string]store.SessionTouch{}, full: make(chan struct{}, 1)}
}

// add queues one touch, merged with one of the same session already
// waiting: the later expiry, and the last-seen address if either was
// seen.
func (t *touches) add(one store.SessionTouch) {
	t.mu.Lock()
	if !t.put(one, false) {
		t.dropped++
	}
	n := len(t.due)
	t.mu.Unlock()
	if n >= touchBatch {
		select {
		case t.full <- struct{}{}:
		default:
		}
	}
}

// put merges one into the waiting touches (older: one came before the
// waiting touch of its session, if any), within the bound. Called with
// mu held.
func (t *touches) put(one store.SessionTouch, older bool) bool {
	w, ok := t.due[one.Token]
	if !ok {
		if len(t.due) >= touchMax {
			return false
		}
		t.due[one.Token] = one
		return true
	}
	newer, earlier := one, w
	if older {
		newer, earlier = w, one
	}
	if earlier.Expiry.After(newer.Expiry) {
		newer.Expiry = earlier.Expiry
	}
	if !newer.Seen {
		newer.Seen, newer.IP = earlier.Seen, earlier.IP
	}
	t.due[one.Token] = newer
	return true
}

// run writes the waiting touches every touchEvery, or when touchBatch
// are waiting, until ctx ends; then writes what is left.
func (t *touches) run(ctx context.Context) {
	tick := time.NewTicker(touchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// The last ones are written as shutdown goes on.
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			t.flush(last)
			cancel()
			return
		case <-tick.C:
		case <-t.full:
		}
		t.flush(ctx)
	}
}

// flush writes every waiting touch, touchBatch to a statement. A failed
// statement's touches wait for the next write (merged with newer ones of
// their sessions), within the bound.
func (t *touches) flush(ctx context.Context) {
	t.mu.Lock()
	due, dropped := t.due, t.dropped
	t.due, t.dropped = make(map[string]store.SessionTouch, len(due)), 0
	t.mu.Unlock()
	if dropped > 0 {
		t.log.Warn("session touches dropped: too many waiting", "count", dropped)
	}
	batch := make([]store.SessionTouch, 0, min(len(due), touchBatch))
	for _, one := range due {
		batch = append(batch, one)
		if len(batch) == touchBatch {
			t.write(ctx, batch)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		t.write(ctx, batch)
	}
}

func (t *touches) write(ctx context.Context, batch []store.SessionTouch) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := t.st.Touch(wctx, batch)
	if err == nil {
		return
	}
	t.log.Warn("write session touches", "sessions", len(batch), "err", err)
	if ctx.Err() != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, one := range batch {
		if !t.put(one, true) {
			t.dropped++
		}
	}
}

package hold

// The engine: one process's hot caches of events (load, look up, evict),
// its Redis tier, and the state every job shares.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/singleflight"

	"seatd/internal/apperr"
	"seatd/internal/seatlock"
	"seatd/internal/store"
	"seatd/internal/telemetry"
)

// Bus carries messages between processes (see package realtime).
type Bus interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(channel string, h func([]byte), resync func()) (unsubscribe func())
}

// Options are the hold rules' settings and the background jobs' pace.
type Options struct {
	HoldTTL            time.Duration
	Extension          time.Duration
	MaxExtensions      int
	MaxHoldsPerBuyer   int
	MaxSeatsPerRequest int
	ReaperBatch        int
	BreakerFailures    int
	BreakerOpenFor     time.Duration
	// StaleLockAge is how old a Redis lock must be before a disagreement
	// with Postgres is taken to mean the lock is orphaned. It must exceed
	// the time a hold statement can still commit after its lock was taken
	// (the Postgres statement timeout, twice), so a lock whose transaction
	// may still commit is never removed for being unknown to Postgres.
	StaleLockAge time.Duration
	// CacheIdle is how long an event nobody watches or asks about stays in
	// the hot cache.
	CacheIdle time.Duration
	// OfferTTL is how long a waitlist offer holds its seats (0: DefaultOfferTTL).
	OfferTTL time.Duration
	// BuyersPay: a buyer's seats that cost something are bought through
	// a payment (Payments), not Holds.Purchase (SEATD_PAYMENTS=required).
	BuyersPay bool

	// FeedEvery, ReapEvery, OfferEvery and SnapshotEvery are how often
	// the follower (while an event is cached), the reaper, the waitlist's
	// offer rounds (a backstop: queued work is announced) and the
	// occupancy snapshots run (docs/architecture.md#background-work).
	FeedEvery, ReapEvery, OfferEvery, SnapshotEvery time.Duration
	// WarmEvery is how often the warmer looks for events on sale; it
	// keeps at most WarmEvents of them, WarmSeats seats in all, loaded.
	WarmEvery             time.Duration
	WarmEvents, WarmSeats int
}

// Engine is the hold core of one process: the hot caches of its events
// (cache.go), the Redis tier (redis.go), and commit and publish
// (publish.go), over Postgres, which alone decides. The jobs (Holds,
// BoxOffice, ...) use it; the Follower keeps it in line with Postgres.
type Engine struct {
	store *store.Store
	redis *redisTier
	locks *seatlock.Locks
	bus   Bus
	opt   Options
	log   *slog.Logger
	m     *telemetry.Metrics
	now   func() time.Time

	// self names this process in the messages it publishes; own is how
	// they begin (a message of ours is skipped on receipt: commit applied
	// its deltas already).
	self uuid.UUID
	own  []byte

	// kick asks the follower for a round now (buffered, never blocks).
	kick chan struct{}
	// caught tells the requests waiting for a round (catchUp) that one
	// served them.
	caught catchUps

	// tasks is the work the engine's jobs start in the background (a warm
	// after publishing, reloads of pinned events); Close cancels its
	// context (tasksCtx) and waits for it.
	tasks     sync.WaitGroup
	tasksCtx  context.Context
	stopTasks context.CancelFunc

	mu     sync.Mutex
	closed bool // Close began: no more tasks
	events map[[2]uuid.UUID]*eventState
	loads  singleflight.Group
}

// NewEngine builds the engine. now is the clock (time.Now outside tests).
func NewEngine(st *store.Store, locks *seatlock.Locks, bus Bus, opt Options, log *slog.Logger, m *telemetry.Metrics, now func() time.Time) *Engine {
	if opt.StaleLockAge == 0 {
		opt.StaleLockAge = 30 * time.Second
	}
	if opt.CacheIdle == 0 {
		opt.CacheIdle = 10 * time.Minute
	}
	self := uuid.New()
	e := &Engine{store: st, locks: locks, bus: bus, opt: opt, log: log, m: m, now: now, self: self, own: ownPrefix(self),
		kick: make(chan struct{}, 1), events: map[[2]uuid.UUID]*eventState{}}
	e.tasksCtx, e.stopTasks = context.WithCancel(context.Background())
	// While Redis was out of reach, locks may have been taken or dropped
	// there without this process seeing it: no event's locks are trusted
	// until synced again.
	e.redis = newRedisTier(locks, opt, log, m, func() {
		for _, ev := range e.cachedEvents() {
			e.setSynced(ev, false)
		}
	})
	return e
}

// FastPath reports whether holds go through Redis: Redis is usable and
// every cached event's locks are synced.
func (e *Engine) FastPath() bool { return e.redis.usable() && e.redis.unsynced.Load() == 0 }

// UnsyncedEvents is how many cached events' Redis locks are not synced
// with Postgres (for a gauge: above zero for long means the follower
// cannot bring Redis in line).
func (e *Engine) UnsyncedEvents() int64 { return e.redis.unsynced.Load() }

// CachedEvents is how many events this process has in its hot cache.
func (e *Engine) CachedEvents() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.events)
}

// BreakerState is the Redis breaker's state: closed, half-open or open;
// "recovering" while Redis answers but some event is not synced yet.
func (e *Engine) BreakerState() string {
	st := e.redis.breaker.State()
	if st == gobreaker.StateClosed && e.redis.unsynced.Load() > 0 {
		return "recovering"
	}
	return st.String()
}

// fast reports whether a hold on ev may take the fast path.
func (e *Engine) fast(ev *eventState) bool { return e.redis.usable() && ev.synced.Load() }

func (e *Engine) setSynced(ev *eventState, ok bool) {
	if ev.synced.Swap(ok) != ok {
		if ok {
			e.redis.unsynced.Add(-1)
		} else {
			e.redis.unsynced.Add(1)
		}
	}
}

// wake asks the follower for a round now.
func (e *Engine) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// buyerEvent is event for what a buyer reads or joins of an event (their
// cart, the waitlist): a draft is its organizers' until it is published,
// so to anyone but staff it is not found, as in the lists and pages.
func (e *Engine) buyerEvent(ctx context.Context, a Actor, id uuid.UUID) (*eventState, error) {
	ev, err := e.event(ctx, a.Org, id)
	if err == nil && !a.Staff() && ev.settings.Load().Status == store.EventDraft {
		return nil, apperr.E(apperr.NotFound, "event not found")
	}
	return ev, err
}

// event returns the hot cache of an event, loading it on first use; it is
// the tenancy gate too: an event of another org is simply not found.
func (e *Engine) event(ctx context.Context, org, id uuid.UUID) (*eventState, error) {
	key := [2]uuid.UUID{org, id}
	e.mu.Lock()
	ev, ok := e.events[key]
	e.mu.Unlock()
	if ok {
		ev.used.Store(e.now().UnixNano())
		return ev, nil
	}
	v, err, _ := e.loads.Do(org.String()+id.String(), func() (any, error) {
		// The load is shared by every caller waiting for it, so one caller
		// giving up must not fail the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		e.mu.Lock()
		if ev, ok := e.events[key]; ok {
			e.mu.Unlock()
			return ev, nil
		}
		e.mu.Unlock()
		return e.load(ctx, org, id)
	})
	if err != nil {
		return nil, err
	}
	return v.(*eventState), nil
}

// load reads an event from Postgres into a new hot cache, syncs its Redis
// locks if Redis is usable, and adds it to the cache.
func (e *Engine) load(ctx context.Context, org, id uuid.UUID) (*eventState, error) {
	set, err := e.store.Events.Settings(ctx, org, id)
	if err != nil {
		return nil, err
	}
	ev := newEventState(org, id)
	ev.setSettings(set)
	// Subscribe before loading so no delta committed during the load
	// is missed; deltas that arrive early are queued and replayed. A
	// resubscribe may have lost messages: the follower's round reads
	// what they told (seats' and waitlists' changes) from the feed.
	ev.unsub = e.bus.Subscribe(e.locks.Keys(org, id).Live(), func(b []byte) { e.receive(ev, b) }, e.wake)
	secs, seats, at, err := e.store.Feed.LoadEvent(ctx, org, id)
	if err != nil {
		ev.unsub()
		return nil, fmt.Errorf("load event: %w", err)
	}
	// What Redis should hold, as of the load's snapshot (fill goes on
	// to apply newer deltas to seats).
	var held []store.Seat
	var maxFence int64
	for i := range seats {
		if seats[i].Status == store.Held {
			held = append(held, seats[i])
		}
		maxFence = max(maxFence, seats[i].Fence)
	}
	ev.notify(ev.fill(secs, seats))
	ev.at = at
	ev.used.Store(e.now().UnixNano())
	e.redis.unsynced.Add(1)
	if e.redis.usable() {
		// The fast path is open from the first request on; if this
		// fails, the follower syncs the event on its next round.
		if err := e.fullSyncFrom(ctx, ev, held, maxFence); err != nil {
			e.log.Warn("sync redis for a loaded event", "org", org, "event", id, "err", err)
		}
	}
	e.mu.Lock()
	e.events[[2]uuid.UUID{org, id}] = ev
	e.mu.Unlock()
	e.m.HotCacheSeats.Add(float64(len(seats)))
	e.wake()
	return ev, nil
}

// cached returns an event's hot cache if this process has it, without
// loading it.
func (e *Engine) cached(org, event uuid.UUID) *eventState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events[[2]uuid.UUID{org, event}]
}

// cachedEvents lists the events this process has in its hot cache.
func (e *Engine) cachedEvents() []*eventState {
	e.mu.Lock()
	defer e.mu.Unlock()
	evs := make([]*eventState, 0, len(e.events))
	for _, ev := range e.events {
		evs = append(evs, ev)
	}
	return evs
}

// evict drops an event from the cache.
func (e *Engine) evict(ev *eventState) {
	e.mu.Lock()
	cur := e.events[[2]uuid.UUID{ev.org, ev.id}]
	if cur == ev {
		delete(e.events, [2]uuid.UUID{ev.org, ev.id})
	}
	e.mu.Unlock()
	if cur != ev {
		return
	}
	ev.unsub()
	if !ev.synced.Load() {
		e.redis.unsynced.Add(-1)
	}
	ev.mu.RLock()
	n := len(ev.all)
	ev.mu.RUnlock()
	e.m.HotCacheSeats.Sub(float64(n))
	e.m.CacheEvictions.Inc()
}

// background runs f on a goroutine of its own that Close waits for;
// after Close began, f does not run.
func (e *Engine) background(f func(ctx context.Context)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.tasks.Go(func() { f(e.tasksCtx) })
}

// Close ends the engine's background work, waits for it, and drops every
// subscription.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.stopTasks()
	e.tasks.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, ev := range e.events {
		ev.unsub()
		delete(e.events, k)
	}
}

// loop runs round every interval, and at once on each kick (nil: never),
// until ctx ends: the shape of the core's timed jobs (reaper, snapshots,
// warmer).
func loop(ctx context.Context, every time.Duration, kick <-chan struct{}, round func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		round(ctx)
	}
}

// Package hold is the hold core: the rules for holding, releasing,
// extending, buying and blocking seats, across three tiers — this
// process's hot cache, Redis locks, and Postgres, which alone decides.
// It knows nothing of HTTP; pages, the JSON API, sockets and the CLI all
// call the same methods.
package hold

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/singleflight"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/realtime"
	"seatd/internal/seatlock"
	"seatd/internal/store"
	"seatd/internal/telemetry"
)

// Role is what an actor may do. It lives in the hold core, not in auth,
// because the core's use cases are what roles decide (Actor.Staff, who
// may hold, release others' holds, block seats, reconcile); auth only
// stores it on an account (as text, store.User.Role) and checks its name.
type Role string

// Roles.
const (
	RoleBuyer     Role = "buyer"
	RoleOrganizer Role = "organizer"
	RoleBoxOffice Role = "box_office"
	// RoleDoor scans tickets at the door (package door) and nothing else.
	RoleDoor Role = "door"
)

// Hold sources.
const (
	SourceWeb       = "web"
	SourceAPI       = "api"
	SourceBoxOffice = "box_office"
)

// Actor is who asks: always taken from the server session, never from
// request input.
type Actor struct {
	Org  uuid.UUID
	User uuid.UUID
	Role Role
}

// Staff reports whether the actor may act on other people's holds.
func (a Actor) Staff() bool { return a.Role == RoleOrganizer || a.Role == RoleBoxOffice }

// Bus carries messages between processes (see package realtime).
type Bus interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(channel string, h func([]byte), resync func()) (unsubscribe func())
}

// Options are the hold rules' settings.
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
}

// Service is the hold core of one process: the use cases (hold.go,
// ops.go, registry.go) over three tiers — the hot cache (cache.go), Redis
// (redis.go) and Postgres, which alone decides — with one follower
// (follower.go) that keeps the first two in line with the third.
type Service struct {
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

	// unsynced counts cached events whose Redis state is not synced.
	unsynced atomic.Int64
	// kick asks the follower for a round now (buffered, never blocks).
	kick chan struct{}
	// offerHook, set by tests only, runs before an offer round's
	// transaction commits (store.OfferParams.BeforeCommit).
	offerHook func(context.Context) error
	// followMu makes follower rounds one at a time.
	followMu sync.Mutex

	mu     sync.Mutex
	events map[[2]uuid.UUID]*eventState
	// pinned are events kept loaded while on sale, until when (warm.go).
	pinned map[[2]uuid.UUID]*pin
	loads  singleflight.Group
}

// New builds the core. now is the clock (time.Now outside tests).
func New(st *store.Store, locks *seatlock.Locks, bus Bus, opt Options, log *slog.Logger, m *telemetry.Metrics, now func() time.Time) *Service {
	if opt.StaleLockAge == 0 {
		opt.StaleLockAge = 30 * time.Second
	}
	if opt.CacheIdle == 0 {
		opt.CacheIdle = 10 * time.Minute
	}
	self := uuid.New()
	s := &Service{store: st, locks: locks, bus: bus, opt: opt, log: log, m: m, now: now, self: self, own: ownPrefix(self),
		kick: make(chan struct{}, 1), events: map[[2]uuid.UUID]*eventState{},
		pinned: map[[2]uuid.UUID]*pin{}}
	// While Redis was out of reach, locks may have been taken or dropped
	// there without this process seeing it: no event's locks are trusted
	// until synced again.
	s.redis = newRedisTier(locks, opt, log, m, func() {
		for _, ev := range s.cachedEvents() {
			s.setSynced(ev, false)
		}
	})
	return s
}

// FastPath reports whether holds go through Redis: Redis is usable and
// every cached event's locks are synced.
func (s *Service) FastPath() bool { return s.redis.usable() && s.unsynced.Load() == 0 }

// UnsyncedEvents is how many cached events' Redis locks are not synced
// with Postgres (for a gauge: above zero for long means the follower
// cannot bring Redis in line).
func (s *Service) UnsyncedEvents() int64 { return s.unsynced.Load() }

// CachedEvents is how many events this process has in its hot cache.
func (s *Service) CachedEvents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// BreakerState is the Redis breaker's state: closed, half-open or open;
// "recovering" while Redis answers but some event is not synced yet.
func (s *Service) BreakerState() string {
	st := s.redis.breaker.State()
	if st == gobreaker.StateClosed && s.unsynced.Load() > 0 {
		return "recovering"
	}
	return st.String()
}

// fast reports whether a hold on ev may take the fast path.
func (s *Service) fast(ev *eventState) bool { return s.redis.usable() && ev.synced.Load() }

func (s *Service) setSynced(ev *eventState, ok bool) {
	if ev.synced.Swap(ok) != ok {
		if ok {
			s.unsynced.Add(-1)
		} else {
			s.unsynced.Add(1)
		}
	}
}

// wake asks the follower for a round now.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// buyerEvent is event for what a buyer reads or joins of an event (their
// cart, the waitlist): a draft is its organizers' until it is published,
// so to anyone but staff it is not found, as in the lists and pages.
func (s *Service) buyerEvent(ctx context.Context, a Actor, id uuid.UUID) (*eventState, error) {
	ev, err := s.event(ctx, a.Org, id)
	if err == nil && !a.Staff() && ev.settings.Load().Status == store.EventDraft {
		return nil, apperr.E(apperr.NotFound, "event not found")
	}
	return ev, err
}

// event returns the hot cache of an event, loading it on first use; it is
// the tenancy gate too: an event of another org is simply not found.
func (s *Service) event(ctx context.Context, org, id uuid.UUID) (*eventState, error) {
	key := [2]uuid.UUID{org, id}
	s.mu.Lock()
	ev, ok := s.events[key]
	s.mu.Unlock()
	if ok {
		ev.used.Store(s.now().UnixNano())
		return ev, nil
	}
	v, err, _ := s.loads.Do(org.String()+id.String(), func() (any, error) {
		// The load is shared by every caller waiting for it, so one caller
		// giving up must not fail the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		s.mu.Lock()
		if ev, ok := s.events[key]; ok {
			s.mu.Unlock()
			return ev, nil
		}
		s.mu.Unlock()
		e, err := s.store.EventSettings(ctx, org, id)
		if err != nil {
			return nil, err
		}
		ev := newEventState(org, id)
		ev.setSettings(e)
		// Subscribe before loading so no delta committed during the load
		// is missed; deltas that arrive early are queued and replayed. A
		// resubscribe may have lost messages: the follower's round reads
		// what they told (seats' and waitlists' changes) from the feed.
		ev.unsub = s.bus.Subscribe(s.locks.Keys(org, id).Live(), func(b []byte) { s.receive(ev, b) }, s.wake)
		secs, seats, at, err := s.store.LoadEvent(ctx, org, id)
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
		ev.used.Store(s.now().UnixNano())
		s.unsynced.Add(1)
		if s.redis.usable() {
			// The fast path is open from the first request on; if this
			// fails, the follower syncs the event on its next round.
			if err := s.fullSyncFrom(ctx, ev, held, maxFence); err != nil {
				s.log.Warn("sync redis for a loaded event", "org", org, "event", id, "err", err)
			}
		}
		s.mu.Lock()
		s.events[key] = ev
		s.mu.Unlock()
		s.m.HotCacheSeats.Add(float64(len(seats)))
		s.wake()
		return ev, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*eventState), nil
}

func (s *Service) receive(ev *eventState, b []byte) {
	if bytes.HasPrefix(b, s.own) {
		// Ours: applied and told to local watchers by commit already.
		return
	}
	msg, err := decodeMessage(b)
	if err != nil {
		s.log.Warn("undecodable live message", "event", ev.id, "err", err)
		return
	}
	if msg.Settings {
		// The follower's round reads every cached event's settings.
		s.wake()
	}
	if msg.Waitlist != nil {
		ev.notifyLine(*msg.Waitlist)
	}
	// Never let a message touch another tenant's or event's cache.
	ds := slices.DeleteFunc(msg.Deltas, func(d Delta) bool { return d.Org != ev.org || d.Event != ev.id })
	s.m.DeltasIn.Add(float64(len(ds)))
	ev.notify(ev.apply(ds))
}

// commit applies deltas of a committed change to this process's cache,
// tells local watchers, and publishes them to the other processes. A
// delta that does not arrive (this process dies, a message is dropped)
// reaches them through the feed.
func (s *Service) commit(ctx context.Context, org, event uuid.UUID, ds []Delta) {
	s.commitThen(ctx, org, event, ds, nil)
}

// commitThen is commit calling applied (if set) once this process's
// cache has the change, before it is published.
func (s *Service) commitThen(ctx context.Context, org, event uuid.UUID, ds []Delta, applied func()) {
	if applied != nil {
		defer func() {
			if applied != nil {
				applied()
			}
		}()
	}
	if len(ds) == 0 {
		return
	}
	// Other processes learn of the change from the message; this one
	// skips its own messages, as it applies them here. An event still
	// loading is not cached yet: its message is then sent unsigned, so
	// the load's queue gets it like anyone else's.
	from := uuid.Nil
	if ev := s.cached(org, event); ev != nil {
		ev.notify(ev.apply(ds))
		from = s.self
	}
	if applied != nil {
		applied()
		applied = nil
	}
	// Messages are split to fit the bus's bound, which the Postgres NOTIFY
	// fallback sets (a fixed count of 20 deltas overran it for deltas
	// naming their actor and hold).
	channel := s.locks.Keys(org, event).Live()
	ms, err := deltaMessages(from, ds, realtime.MaxPayload)
	for _, b := range ms {
		if perr := s.bus.Publish(context.WithoutCancel(ctx), channel, b); perr != nil {
			err = perr
		}
	}
	if err != nil {
		s.log.Error("publish deltas", "org", org, "event", event, "err", err)
		s.m.BackgroundErrors.WithLabelValues("publish").Inc()
	}
	s.m.DeltasOut.Add(float64(len(ds)))
}

// Watch calls f with every change of an event seen by this process (its
// own commits and other processes' deltas) until the returned function is
// called. The event must belong to the actor's organization.
func (s *Service) Watch(ctx context.Context, a Actor, event uuid.UUID, f func([]Delta)) (func(), error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	id := ev.watch(f)
	return func() { ev.unwatch(id) }, nil
}

// WatchWaitlist calls f with every change of an event's waitlist (this
// process's and other processes') until the returned function is called,
// and with a change of the whole line when messages may have been lost.
// The event must belong to the actor's organization. f must not block.
func (s *Service) WatchWaitlist(ctx context.Context, a Actor, event uuid.UUID, f func(WaitlistChange)) (func(), error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	id := ev.watchLine(f)
	return func() { ev.unwatch(id) }, nil
}

// publishWaitlist tells this process's line watchers and the other
// processes of a committed waitlist change, like commit does for seats.
func (s *Service) publishWaitlist(ctx context.Context, org, event uuid.UUID, c WaitlistChange) {
	from := uuid.Nil
	if ev := s.cached(org, event); ev != nil {
		ev.notifyLine(c)
		from = s.self
	}
	// Users are bounded by one offer round's offers; keep each message
	// under the NOTIFY fallback's limit all the same.
	for {
		n := min(len(c.Users), 100)
		part := WaitlistChange{Users: c.Users[:n], Line: c.Line}
		b, err := encodeMessage(message{From: from, Waitlist: &part})
		if err == nil {
			err = s.bus.Publish(context.WithoutCancel(ctx), s.locks.Keys(org, event).Live(), b)
		}
		if err != nil {
			s.log.Error("publish waitlist change", "org", org, "event", event, "err", err)
			s.m.BackgroundErrors.WithLabelValues("publish").Inc()
		}
		if c.Users = c.Users[n:]; len(c.Users) == 0 {
			return
		}
	}
}

// Seats returns every seat of an event in idx order, from the hot cache.
func (s *Service) Seats(ctx context.Context, a Actor, event uuid.UUID) ([]store.Section, []store.Seat, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, nil, err
	}
	secs, _ := ev.occupancy()
	return secs, ev.snapshot(), nil
}

// cachedEvents lists the events this process has in its hot cache.
func (s *Service) cachedEvents() []*eventState {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := make([]*eventState, 0, len(s.events))
	for _, ev := range s.events {
		evs = append(evs, ev)
	}
	return evs
}

// Close drops every subscription.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ev := range s.events {
		ev.unsub()
		delete(s.events, k)
	}
}

// evict drops an event from the cache.
func (s *Service) evict(ev *eventState) {
	s.mu.Lock()
	cur := s.events[[2]uuid.UUID{ev.org, ev.id}]
	if cur == ev {
		delete(s.events, [2]uuid.UUID{ev.org, ev.id})
	}
	s.mu.Unlock()
	if cur != ev {
		return
	}
	ev.unsub()
	if !ev.synced.Load() {
		s.unsynced.Add(-1)
	}
	ev.mu.RLock()
	n := len(ev.all)
	ev.mu.RUnlock()
	s.m.HotCacheSeats.Sub(float64(n))
	s.m.CacheEvictions.Inc()
}

// SeatView is a seat's layout and state with its section label, for
// rendering.
type SeatView struct {
	store.Seat
	Section string
	// Cat is the 1-based position of the seat's category among the
	// event's categories (0: none), for the map's colour and cue.
	Cat int
	// Standing: a place of a standing (general admission) section.
	Standing bool
}

// catIndex is the 1-based position of a category key among cats.
func catIndex(cats []store.Category, key string) int {
	if key == "" {
		return 0
	}
	for i, c := range cats {
		if c.Key == key {
			return i + 1
		}
	}
	return 0
}

// Label names the seat for people: section-row-number ("B-4-12").
func (v SeatView) Label() string { return store.SeatLabel(v.Section, v.Row, v.Number) }

// CartLabel names the seat in a buyer's cart: its label, or for a place
// of a standing section, the section and the place's number ("GA place
// 94"), since a place has no row a buyer would look for.
func (v SeatView) CartLabel() string {
	if v.Standing {
		return store.PlaceLabel(v.Section, v.Number)
	}
	return v.Label()
}

// cached returns an event's hot cache if this process has it, without
// loading it.
func (s *Service) cached(org, event uuid.UUID) *eventState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[[2]uuid.UUID{org, event}]
}

// SeatLayout returns one seat of an event cached in this process. It does
// no tenancy check: it is for renderers of deltas this process already
// received for that organization's event.
func (s *Service) SeatLayout(org, event, seat uuid.UUID) (SeatView, bool) {
	ev := s.cached(org, event)
	if ev == nil {
		return SeatView{}, false
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	st, ok := ev.lookup(seat)
	if !ok {
		return SeatView{}, false
	}
	sec := ev.sections[ev.sectionOf[st.SectionID]]
	return SeatView{Seat: *st, Section: sec.Label, Cat: catIndex(ev.settings.Load().Categories, st.Category),
		Standing: sec.Kind == chart.GA}, true
}

// SeatViews returns every seat of an event with section labels, in idx
// order (the tenancy gate applies).
func (s *Service) SeatViews(ctx context.Context, a Actor, event uuid.UUID) ([]store.Section, []SeatView, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, nil, err
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	out := make([]SeatView, len(ev.all))
	cats := ev.settings.Load().Categories
	for i, st := range ev.all {
		out[i] = SeatView{Seat: st, Section: ev.sections[ev.sectionOf[st.SectionID]].Label, Cat: catIndex(cats, st.Category)}
	}
	return ev.sections, out, nil
}

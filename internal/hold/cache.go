package hold

// The hot cache of one event: every seat's layout and state, its counts,
// and the lists the follower takes, kept current by deltas.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"seatd/internal/chart"
	"seatd/internal/store"
)

// eventState is the hot cache of one event in this process: every seat's
// layout and current state, kept current by live deltas and by the change
// feed from its cursor. It is derived from Postgres (loaded lazily) and
// never trusted for a grant, only for a fast refusal.
type eventState struct {
	org, id uuid.UUID

	// at is the feed cursor the cache is current at; only the loader and
	// then the follower (one at a time, see Follower.round) touch it.
	at store.Cursor
	// synced says Redis agrees with Postgres for this event as far as this
	// process knows: it ran a full sync and every incremental sync since
	// succeeded. The fast path is used only while it is set.
	synced atomic.Bool
	// used is when a request last touched the event (unix nanoseconds),
	// for eviction.
	used atomic.Int64
	// settings is the event row as last read: status, sales window, hold
	// TTL and cap, prices. Holds read it for the cheap early refusal and
	// their TTL and cap; Postgres checks the window and cap itself.
	settings atomic.Pointer[store.Event]
	// bestInFlight counts best-available requests under way (see Holds.best).
	bestInFlight atomic.Int64
	// claimMu makes a best-available pick and its claim one step; claimed
	// marks, by position in all, the seats picked by requests of this
	// process whose holds have not returned yet. Other requests here see
	// them as taken, so a crowd on one process never picks the same block
	// twice (see Holds.best). A crowd's picks scan the same front rows over
	// and over, so this is a slice, not a map by seat id.
	claimMu sync.Mutex
	claimed []bool
	// busyRows counts, per row, the claims in it: under the strict orphan
	// rule, holds in one row are decided one at a time in Postgres (see
	// store.lockRows), so picks go to rows nobody here is holding in
	// while there are such rows, rather than queue there.
	busyRows map[rowKey]int
	// rowFreed is closed (and cleared) when a claim ends: requests
	// waiting for a row to be free here wait on it (see waitRow).
	rowFreed chan struct{}

	// seatsVer is the seat list's version: the sum of the cached seats'
	// versions, set by fill and advanced by every delta applied (by how
	// far it raises its seat's version). Every change a seat list shows
	// raises a seat's version (the layout is fixed once loaded), and the
	// cache applies only newer ones, so it moves with every change and
	// only then. Being a sum of what the cache holds, not a count of this
	// cache's changes, it never repeats across a reload of the event: a
	// reload reads versions at least as new. Written under mu, read
	// without it (Events.SeatsVersion).
	seatsVer atomic.Int64

	mu      sync.RWMutex
	ready   bool
	pending []Delta // deltas that arrived while loading
	// doubtful are Redis locks whose hold may never have been committed
	// (a write that failed, whose reply was lost, or whose writer died),
	// each with the time from which to check it; the follower drops those
	// Postgres does not have once their time comes.
	doubtful map[doubtKey]time.Time
	// recheck are seats whose Redis state was found to disagree with
	// Postgres (Redis let a hold through that Postgres then refused); the
	// follower syncs them from Postgres. Past maxDoubtful, the full sync
	// after an outage finds the rest.
	recheck pendingList[uuid.UUID]
	// known are holds this process made on the fast path since the
	// follower's last round: its cache and Redis have their state, so the
	// feed leaves out the seats they are the last change of (see
	// store.Feed.Changes).
	known pendingList[uuid.UUID]
	// all is every seat in idx order (the slice the load returned, kept
	// as it is: one allocation, no pointer per seat for the collector to
	// trace); pos finds a seat in it by id.
	all       []store.Seat
	pos       map[uuid.UUID]int32
	sections  []store.Section
	sectionOf map[uuid.UUID]int           // section id -> index into sections
	counts    []store.Counts              // per section, same order as sections
	catCounts map[string]store.Counts     // per seat category ("" for none)
	userHolds map[uuid.UUID]int           // active holds per user
	places    map[uuid.UUID][]*store.Seat // a GA section's places, by section id
	// rows are the seated rows in idx order, each its seats' positions in
	// all by seat number: best available scans them without copying or
	// sorting a row per request (the layout is fixed once loaded).
	rows [][]int32
	// rows' state for best available (see rowHint), and each seat's row
	// (-1: none).
	hint     rowHint
	rowAt    []int32
	maxFence int64
	watchers map[int]func([]Delta)
	// lineWatchers are told of the event's waitlist changes; their ids
	// come from nextWatch too.
	lineWatchers map[int]func(WaitlistChange)
	nextWatch    int
	unsub        func()
}

// doubtfulLock is a lock to check against Postgres from notBefore on.
type doubtfulLock struct {
	seat, hold uuid.UUID
	notBefore  time.Time
}

// doubtKey names a doubtful lock: one seat's lock of one hold, which
// syncs of the seat's later states may report again and again.
type doubtKey struct{ seat, hold uuid.UUID }

func newEventState(org, id uuid.UUID) *eventState {
	return &eventState{org: org, id: id, watchers: map[int]func([]Delta){}, lineWatchers: map[int]func(WaitlistChange){},
		busyRows: map[rowKey]int{}, recheck: pendingList[uuid.UUID]{max: maxDoubtful}, known: pendingList[uuid.UUID]{max: maxKnown}}
}

// pendingList is a bounded list that requests add to and the follower
// takes whole, with a lock of its own (every hold may add to one). Past
// max, additions are dropped: each list says so of its dropped items.
type pendingList[T any] struct {
	mu    sync.Mutex
	items []T
	max   int
}

func (p *pendingList[T]) add(xs ...T) {
	p.mu.Lock()
	if len(p.items)+len(xs) <= p.max {
		p.items = append(p.items, xs...)
	}
	p.mu.Unlock()
}

func (p *pendingList[T]) take() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	xs := p.items
	p.items = nil
	return xs
}

// fill sets the state from a load and returns the deltas that arrived
// while it ran and are newer than it.
func (e *eventState) fill(sections []store.Section, seats []store.Seat) []Delta {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sections = sections
	e.sectionOf = make(map[uuid.UUID]int, len(sections))
	for i, s := range sections {
		e.sectionOf[s.ID] = i
	}
	e.all = seats
	// Claims in flight keep their places: a reload lists the same seats
	// in the same (idx) order.
	if len(e.claimed) != len(seats) {
		e.claimed = make([]bool, len(seats))
	}
	e.pos = make(map[uuid.UUID]int32, len(seats))
	e.counts = make([]store.Counts, len(sections))
	e.catCounts = map[string]store.Counts{}
	e.userHolds = map[uuid.UUID]int{}
	e.places = gaPlaces(sections, seats)
	e.rows = seatedRows(sections, e.sectionOf, seats)
	e.rowAt = make([]int32, len(seats))
	for i := range e.rowAt {
		e.rowAt[i] = -1
	}
	e.hint = rowHint{free: make([]int32, len(e.rows)), ver: make([]uint32, len(e.rows)),
		run: make([]int32, len(e.rows)), runAt: make([]uint32, len(e.rows))}
	for r, row := range e.rows {
		for _, p := range row {
			e.rowAt[p] = int32(r) // #nosec G115 -- far fewer rows than 2^31
			if e.freeAt(p) {
				e.hint.free[r]++
			}
		}
	}
	var changed []Delta
	var ver int64
	for i := range seats {
		s := &seats[i]
		ver += s.Version
		e.pos[s.ID] = int32(i) // #nosec G115 -- an event has far fewer than 2^31 seats
		e.counts[e.sectionOf[s.SectionID]].Add(s.Status, 1)
		e.addCategory(s, 1)
		if s.Status == store.Held {
			e.userHolds[s.HolderID]++
		}
		e.maxFence = max(e.maxFence, s.Fence)
	}
	e.seatsVer.Store(ver)
	e.ready = true
	pending := e.pending
	e.pending = nil
	for _, d := range pending {
		if e.applyLocked(d) {
			changed = append(changed, d)
		}
	}
	return changed
}

// lookup finds a cached seat by id; the caller holds mu.
func (e *eventState) lookup(id uuid.UUID) (*store.Seat, bool) {
	i, ok := e.pos[id]
	if !ok {
		return nil, false
	}
	return &e.all[i], true
}

func seatDelta(org, event uuid.UUID, s *store.Seat, kind string, now time.Time) Delta {
	return Delta{Org: org, Event: event, Seat: s.ID, Kind: kind, Status: s.Status, Version: s.Version,
		HoldID: s.HoldID, UserID: s.HolderID, HeldUntil: s.HeldUntil, Fence: s.Fence, At: now}
}

// apply applies deltas newer than what is cached and returns those.
func (e *eventState) apply(ds []Delta) []Delta {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ready {
		e.pending = append(e.pending, ds...)
		return nil
	}
	var out []Delta
	for _, d := range ds {
		if e.applyLocked(d) {
			out = append(out, d)
		}
	}
	return out
}

func (e *eventState) applyLocked(d Delta) bool {
	p, ok := e.pos[d.Seat]
	if !ok {
		return false
	}
	s := &e.all[p]
	if d.Version <= s.Version {
		return false
	}
	defer e.recount(p, e.freeAt(p))
	ci := e.sectionOf[s.SectionID]
	e.counts[ci].Add(s.Status, -1)
	e.addCategory(s, -1)
	if s.Status == store.Held {
		e.userHolds[s.HolderID]--
		if e.userHolds[s.HolderID] <= 0 {
			delete(e.userHolds, s.HolderID)
		}
	}
	e.seatsVer.Add(d.Version - s.Version)
	s.Status, s.Version = d.Status, d.Version
	s.HoldID, s.HolderID, s.HeldUntil = d.HoldID, d.UserID, d.HeldUntil
	if d.Fence > s.Fence {
		s.Fence = d.Fence
	}
	e.maxFence = max(e.maxFence, d.Fence)
	e.counts[ci].Add(s.Status, 1)
	e.addCategory(s, 1)
	if s.Status == store.Held {
		e.userHolds[s.HolderID]++
	}
	return true
}

func (e *eventState) addCategory(s *store.Seat, n int) {
	c := e.catCounts[s.Category]
	c.Add(s.Status, n)
	e.catCounts[s.Category] = c
}

// categoryCounts copies the counts per category.
func (e *eventState) categoryCounts() map[string]store.Counts {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make(map[string]store.Counts, len(e.catCounts))
	for k, c := range e.catCounts {
		out[k] = c
	}
	return out
}

func (e *eventState) setSettings(x store.Event) { e.settings.Store(&x) }

// setSettingsSince stores x, read when prev was e's settings, unless they
// were written since (the write is newer than the read): each write
// stores a new pointer, so the swap fails then. It reports whether x was
// stored.
func (e *eventState) setSettingsSince(x store.Event, prev *store.Event) bool {
	return e.settings.CompareAndSwap(prev, &x)
}

// seat returns a copy of a seat's cached state.
func (e *eventState) seat(id uuid.UUID) (store.Seat, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	s, ok := e.lookup(id)
	if !ok {
		return store.Seat{}, false
	}
	return *s, true
}

func (e *eventState) bumpFence(f int64) {
	e.mu.Lock()
	e.maxFence = max(e.maxFence, f)
	e.mu.Unlock()
}

func (e *eventState) fence() int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.maxFence
}

func (e *eventState) holdsOf(user uuid.UUID) int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.userHolds[user]
}

// maxDoubtful bounds the doubtful locks kept per event through a long
// outage; past it, the full sync after the outage finds the rest (as
// locks Postgres does not know).
const maxDoubtful = 10_000

func (e *eventState) doubt(ls ...doubtfulLock) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.doubtful == nil {
		e.doubtful = map[doubtKey]time.Time{}
	}
	for _, l := range ls {
		k := doubtKey{l.seat, l.hold}
		if at, ok := e.doubtful[k]; ok {
			// The earlier check stands: whatever it finds decides.
			e.doubtful[k] = minTime(at, l.notBefore)
		} else if len(e.doubtful) < maxDoubtful {
			e.doubtful[k] = l.notBefore
		}
	}
}

// maxKnown bounds the holds recorded between two rounds of the follower
// (about 50 000 holds a second at the default round); past it, the feed
// reads the rest as anyone else's.
const maxKnown = 12_500

// due takes the doubtful locks whose time has come.
func (e *eventState) due(now time.Time) []doubtfulLock {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []doubtfulLock
	for k, at := range e.doubtful {
		if !now.Before(at) {
			out = append(out, doubtfulLock{seat: k.seat, hold: k.hold, notBefore: at})
			delete(e.doubtful, k)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (e *eventState) watched() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.watchers)+len(e.lineWatchers) > 0
}

func (e *eventState) heldCount() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	n := 0
	for _, c := range e.counts {
		n += c.Held
	}
	return n
}

// snapshot copies every seat, in idx order.
func (e *eventState) snapshot() []store.Seat {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return append([]store.Seat(nil), e.all...)
}

func (e *eventState) occupancy() ([]store.Section, []store.Counts) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.sections, append([]store.Counts(nil), e.counts...)
}

func (e *eventState) watch(f func([]Delta)) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextWatch++
	e.watchers[e.nextWatch] = f
	return e.nextWatch
}

func (e *eventState) unwatch(id int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.watchers, id)
	delete(e.lineWatchers, id)
}

func (e *eventState) watchLine(f func(WaitlistChange)) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextWatch++
	e.lineWatchers[e.nextWatch] = f
	return e.nextWatch
}

func (e *eventState) notifyLine(c WaitlistChange) {
	e.mu.RLock()
	fs := make([]func(WaitlistChange), 0, len(e.lineWatchers))
	for _, f := range e.lineWatchers {
		fs = append(fs, f)
	}
	e.mu.RUnlock()
	for _, f := range fs {
		f(c)
	}
}

func (e *eventState) notify(ds []Delta) {
	if len(ds) == 0 {
		return
	}
	e.mu.RLock()
	fs := make([]func([]Delta), 0, len(e.watchers))
	for _, f := range e.watchers {
		fs = append(fs, f)
	}
	e.mu.RUnlock()
	for _, f := range fs {
		f(ds)
	}
}

// gaPlaces groups the places of an event's GA sections by section id.
func gaPlaces(sections []store.Section, seats []store.Seat) map[uuid.UUID][]*store.Seat {
	ga := map[uuid.UUID]bool{}
	for _, sec := range sections {
		if sec.Kind == chart.GA {
			ga[sec.ID] = true
		}
	}
	out := map[uuid.UUID][]*store.Seat{}
	for i := range seats {
		if ga[seats[i].SectionID] {
			out[seats[i].SectionID] = append(out[seats[i].SectionID], &seats[i])
		}
	}
	return out
}

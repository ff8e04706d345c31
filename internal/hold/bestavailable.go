package hold

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Choice is how a buyer asked for seats beyond naming them (DESIGN §11).
type Choice struct {
	// Accessible: the buyer needs accessible seating, so the seats held
	// back for it until the event's accessible_release_at are theirs too.
	Accessible bool
	// WithCompanion adds each requested accessible seat's companion seat
	// (the companion-flagged seat beside it), held in the same step.
	WithCompanion bool
}

// HoldChosen holds named seats like Hold, as the buyer chose them.
func (s *Service) HoldChosen(ctx context.Context, a Actor, event uuid.UUID, seatIDs []uuid.UUID, source string, c Choice) (Result, error) {
	if c.WithCompanion {
		ev, err := s.event(ctx, a.Org, event)
		if err != nil {
			return Result{}, err
		}
		seatIDs = withCompanions(ev, seatIDs)
	}
	return s.observedHold(ctx, a, event, seatIDs, source, holdOpts{accessible: c.Accessible})
}

// withCompanions appends, for every accessible seat in ids, the companion
// seat next to it in its row (number ±1), unless already listed.
func withCompanions(ev *eventState, ids []uuid.UUID) []uuid.UUID {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	out := slices.Clone(ids)
	for _, id := range ids {
		i, ok := ev.pos[id]
		if !ok || !ev.all[i].Accessible {
			continue
		}
		st := ev.all[i]
		for _, o := range ev.all {
			if o.SectionID == st.SectionID && o.Row == st.Row && o.Companion &&
				(o.Number == st.Number-1 || o.Number == st.Number+1) && !slices.Contains(out, o.ID) {
				out = append(out, o.ID)
				break
			}
		}
	}
	return out
}

// Best is a best-available request: Count seats, optionally of one
// category and/or one section (by label).
type Best struct {
	Count    int
	Category string
	Section  string
	Choice
}

// bestAttempts bounds how many blocks one request tries when others take
// them first.
const bestAttempts = 8

// bestSpread is how many of the best blocks a request picks among at its
// first try (when as many requests are in flight here).
const bestSpread = 4

// HoldBest holds the best Count seats available, all or none, through the
// same path as clicked seats. Best means: Count seats side by side in one
// row if any row has them — the frontmost such row (the chart lists rows
// from the stage back), then the block nearest the row's centre; else the
// fewest rows, longest runs first. Under the strict orphan rule no block
// that would leave a seat alone is offered. When another buyer takes a
// block first it tries the next one (bounded), choosing at random among
// more of the best blocks each time so a crowd spreads out instead of all
// retrying the same block.
func (s *Service) HoldBest(ctx context.Context, a Actor, event uuid.UUID, b Best, source string) (Result, error) {
	ev, err := s.bestEvent(ctx, a, event, b)
	if err != nil {
		return Result{}, err
	}
	crowd := int(ev.bestInFlight.Add(1))
	defer ev.bestInFlight.Add(-1)
	if !s.fast(ev) {
		return s.observe(a, event, func() (Result, string, error) {
			res, err := s.holdBestPostgres(ctx, ev, a, b, source, crowd)
			return res, "fallback", err
		})
	}
	// A crowd asking at once would all pick the one best block. On this
	// process it does not: a pick is claimed until its hold returns, and
	// claimed seats are taken to the picks after it. Across processes,
	// each picks at random among as many of the best blocks as there are
	// requests in flight here (up to bestSpread; twice as many on each
	// retry), so best is exact for a lone buyer and crowds on several
	// processes spread over the next best blocks instead of colliding.
	return s.pickAndHold(ev, a, b, crowd, func(pick []uuid.UUID) (Result, error) {
		return s.observedHold(ctx, a, event, pick, source, holdOpts{accessible: b.Accessible, fresh: true})
	})
}

// pickAndHold picks blocks for chooser (whose rules they keep), claimed
// on this process while hold holds them, until one is held; a block
// another buyer took first, or that would now leave a seat alone, is left
// out and the next tried, bestAttempts times at most.
func (s *Service) pickAndHold(ev *eventState, chooser Actor, b Best, crowd int, hold func(pick []uuid.UUID) (Result, error)) (Result, error) {
	avoid := map[uuid.UUID]bool{}
	looked := false
	var last error
	for attempt := 0; attempt < bestAttempts; attempt++ {
		// A few of the best blocks at first, twice as many on each retry:
		// picks on this process never collide (claims), so the spread is
		// only for crowds on other processes.
		want := min(crowd, bestSpread) << attempt
		pick := s.claimBest(ev, chooser, b, avoid, want, &looked)
		if pick == nil {
			break
		}
		res, err := hold(pick)
		// The cache has the hold by now (or the refusal's cause is
		// avoided below): the claim has done its work.
		ev.unclaim(pick)
		switch apperr.CodeOf(err) {
		case apperr.SeatTaken, apperr.OrphanSeat:
			for _, id := range pick {
				avoid[id] = true
			}
			last = err
			continue
		}
		return res, err
	}
	return Result{}, notEnough(b.Count, last != nil)
}

// notEnough is the refusal of a best-available request without a block;
// contended says others took the blocks it tried.
func notEnough(count int, contended bool) error {
	e := &apperr.Error{Code: apperr.NotEnoughSeats, Message: fmt.Sprintf("there are not %d seats available together", count)}
	if contended {
		e.Message = fmt.Sprintf("the %d best seats were taken by others as we tried; try again", count)
	}
	return e
}

// holdBestPostgres is best available while Redis cannot be used: the
// pick, its row locks and the hold in one Postgres transaction
// (store.HoldBest), so a crowd passes over blocks others are taking
// (SKIP LOCKED) instead of being refused and asking again. Picks are
// claimed on this process as on the fast path, so its own crowd does not
// even meet in Postgres.
func (s *Service) holdBestPostgres(ctx context.Context, ev *eventState, a Actor, b Best, source string, crowd int) (Result, error) {
	if err := canHold(a); err != nil {
		return Result{}, err
	}
	now := s.now().Truncate(time.Millisecond)
	set := ev.settings.Load()
	if !OpenTo(set, a.Staff(), now) {
		s.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, notOnSale(set, now)
	}
	ttl, cap := s.ttlCap(set, a)
	if cap > 0 && ev.holdsOf(a.User)+b.Count > cap {
		return Result{}, holdLimit(cap)
	}
	s.m.RedisFallback.Inc()
	// Claims end once the cache has the holds, not after they are
	// published: without Redis a publish waits for a Postgres connection.
	var claims []uuid.UUID
	unclaim := sync.OnceFunc(func() { ev.unclaim(claims) })
	defer unclaim()
	var wait, busy bool
	p := store.BestParams{
		HoldParams: store.HoldParams{Org: a.Org, Event: ev.id, User: a.User, Now: now, HeldUntil: now.Add(ttl),
			Source: source, Cap: cap, Staff: a.Staff(), Strict: set.OrphanRule == "strict" && !a.Staff(), Request: requestOf(ctx)},
		Fence: ev.fence() + 1, Section: b.Section, Tries: bestAttempts,
		Pick: func(seats []store.Seat, avoid map[uuid.UUID]bool, final bool, try int) ([]uuid.UUID, bool) {
			want := min(crowd, 64) << try
			ev.claimMu.Lock()
			defer ev.claimMu.Unlock()
			// The rows were read before others of this process committed
			// holds and ended their claims: the cache has those holds.
			ev.mu.RLock()
			defer ev.mu.RUnlock()
			taken := func(id uuid.UUID) bool {
				st, ok := ev.lookup(id)
				return ok && st.Status != store.Available
			}
			blocks, w := s.finder(ev, a, b, seats, rowsOf(seats, nil), avoid, taken).findFree(ev, b, want, final, busy)
			if len(blocks) < want && !final {
				return nil, true
			}
			if len(blocks) == 0 {
				// Blocks only in rows held in here now: the transaction
				// ends, to wait for one without a connection.
				wait = w
				return nil, false
			}
			pick := blocks[rand.IntN(min(len(blocks), want))] // #nosec G404 -- spreading load, not security
			ev.claim(pick)
			claims = append(claims, pick...)
			return pick, false
		}}
	deadline := s.now().Add(maxRowWait)
	var out store.BestOutcome
	for {
		wait = false
		s.m.PGHoldWrites.Inc()
		var err error
		out, err = s.store.Holds.Best(context.WithoutCancel(ctx), p)
		if err != nil {
			return Result{}, s.refusal(ev, fmt.Errorf("best available (postgres): %w", err), cap, now)
		}
		if !wait || len(out.Created) > 0 {
			break
		}
		busy = !ev.waitRow(ctx, deadline)
	}
	s.m.HoldConflict.WithLabelValues("postgres").Add(float64(out.Skipped))
	switch {
	case out.NotOnSale:
		return Result{}, s.refusal(ev, errNotOnSale, cap, now)
	case out.None:
		return Result{}, notEnough(b.Count, out.Skipped > 0)
	}
	seats := make([]store.Seat, len(out.Seats))
	for i, id := range out.Seats {
		seats[i].ID = id
	}
	for _, h := range out.Created {
		ev.bumpFence(h.Fence)
	}
	return s.finishThen(ctx, ev, seats, out.HoldOutcome, a.User, func(id uuid.UUID) string { return s.seatLabel(ev, id) }, unclaim)
}

// claimBest picks a block among the want best ones not avoided nor
// claimed by another request of this process, and claims it. It returns
// nil when there is none.
func (s *Service) claimBest(ev *eventState, a Actor, b Best, avoid map[uuid.UUID]bool, want int, looked *bool) []uuid.UUID {
	ev.claimMu.Lock()
	defer ev.claimMu.Unlock()
	// The cache stays read-locked while rows are scanned, in place:
	// copying rows for every request of a crowd costs more CPU than the
	// holds themselves.
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	blocks := s.bestBlocks(ev, a, b, avoid, want)
	if len(blocks) == 0 && len(avoid) > 0 && !*looked {
		// A refused block's seats are all avoided, but only some of them
		// were taken (or none: an orphan refusal): the rest may be needed
		// for a block now. Look once more with none avoided; the cache has
		// the holds that refused us by now.
		*looked = true
		clear(avoid)
		blocks = s.bestBlocks(ev, a, b, avoid, want)
	}
	if len(blocks) == 0 {
		return nil
	}
	pick := blocks[rand.IntN(min(len(blocks), want))] // #nosec G404 -- spreading load, not security
	ev.claim(pick)
	return pick
}

// bestEvent checks a best-available request's count and filters and
// returns its event.
func (s *Service) bestEvent(ctx context.Context, a Actor, event uuid.UUID, b Best) (*eventState, error) {
	if b.Count < 1 || b.Count > s.opt.MaxSeatsPerRequest {
		return nil, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("ask for between 1 and %d seats", s.opt.MaxSeatsPerRequest),
			Fields:  map[string]string{"best_available.count": fmt.Sprintf("must be 1 to %d", s.opt.MaxSeatsPerRequest)}}
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	return ev, s.bestFilterKnown(ev, b)
}

// bestFilterKnown refuses a category or section the event does not have.
func (s *Service) bestFilterKnown(ev *eventState, b Best) error {
	if b.Category != "" && catIndex(ev.settings.Load().Categories, b.Category) == 0 {
		return &apperr.Error{Code: apperr.Invalid, Message: "this event has no such category",
			Fields: map[string]string{"best_available.category": "is not a category of this event"}}
	}
	if b.Section != "" {
		ev.mu.RLock()
		ok := slices.ContainsFunc(ev.sections, func(x store.Section) bool { return x.Label == b.Section })
		ev.mu.RUnlock()
		if !ok {
			return &apperr.Error{Code: apperr.Invalid, Message: "this event has no such section",
				Fields: map[string]string{"best_available.section": "is not a section of this event"}}
		}
	}
	return nil
}

// bestBlocks lists candidate seat sets, best first, from the hot cache:
// want of them when there are (rows are scanned front to back
// only until want blocks are found, so a big venue costs little). Seats
// claimed by other requests of this process count as taken, and holds in
// one row go together: on the fast path, this process's holds share one
// transaction (store.CreateHolds), which decides them in order. The
// caller holds ev.claimMu and ev.mu (read).
func (s *Service) bestBlocks(ev *eventState, a Actor, b Best, avoid map[uuid.UUID]bool, want int) [][]uuid.UUID {
	f := s.finder(ev, a, b, ev.all, ev.rows, avoid, nil)
	f.hint = &ev.hint
	blocks, _ := f.findFree(ev, b, want, true, true)
	return blocks
}

// findFree is find in the rows of section b.Section if set. Under the
// strict rule, on the Postgres-only path (where each request is a
// transaction of its own, and holds in one row are decided one at a time
// in Postgres), it looks only in rows no claim of this process is in
// unless busy is set; it reports wait when only such rows have blocks
// (and busy is not set): waiting here for one of them costs less than
// queueing for it in Postgres with a connection held. The caller holds
// ev.claimMu.
func (f blockFinder) findFree(ev *eventState, b Best, want int, split, busy bool) (blocks [][]uuid.UUID, wait bool) {
	inSection := func(row []int32) bool {
		return b.Section == "" || ev.sections[ev.sectionOf[f.all[row[0]].SectionID]].Label == b.Section
	}
	f.rowOK = inSection
	if busy || !f.strict || len(ev.busyRows) == 0 {
		return f.find(want, split), false
	}
	g := f
	g.rowOK = func(row []int32) bool { return inSection(row) && ev.busyRows[rowOf(&f.all[row[0]])] == 0 }
	if blocks := g.find(want, false); len(blocks) > 0 {
		return blocks, false
	}
	blocks = f.find(want, false)
	if len(blocks) > 0 {
		return nil, true
	}
	return f.find(want, split), false
}

// finder is a blockFinder for a request over seats laid out in rows: free
// means available (as Postgres sees it: a lapsed hold not yet reaped
// still counts), not claimed by another request of this process, and
// not taken as far as taken says (nil: nothing more). The caller holds
// ev.claimMu.
func (s *Service) finder(ev *eventState, a Actor, b Best, all []store.Seat, rows [][]int32, avoid map[uuid.UUID]bool,
	taken func(uuid.UUID) bool) blockFinder {
	set := ev.settings.Load()
	back := heldBack(set, s.now()) && !a.Staff() && !b.Accessible
	claimed := func(p int32) bool { return ev.claimed[p] }
	if len(all) != len(ev.all) || len(all) > 0 && &all[0] != &ev.all[0] {
		// Seats read from Postgres: their positions are not the cache's.
		claimed = func(p int32) bool {
			i, ok := ev.pos[all[p].ID]
			return ok && ev.claimed[i]
		}
	}
	free := func(p int32) bool {
		return all[p].Status == store.Available && !claimed(p) && (taken == nil || !taken(all[p].ID))
	}
	return blockFinder{all: all, rows: rows, count: b.Count, strict: set.OrphanRule == "strict" && !a.Staff(), free: free,
		plain: taken == nil && len(avoid) == 0 && b.Category == "" && !back,
		eligible: func(p int32) bool {
			st := &all[p]
			return free(p) && (len(avoid) == 0 || !avoid[st.ID]) && (b.Category == "" || st.Category == b.Category) &&
				!(back && (st.Accessible || st.Companion))
		}}
}

// blockFinder finds best-available blocks among seats laid out in rows
// (positions into all, each row by seat number, rows front to back).
type blockFinder struct {
	all      []store.Seat
	rows     [][]int32
	count    int
	strict   bool                   // the orphan rule applies
	free     func(p int32) bool     // free to anyone
	eligible func(p int32) bool     // free and fit for this request
	rowOK    func(row []int32) bool // nil: every row
	// hint, when set, describes rows (the cache's): a row with fewer free
	// seats than count, or whose longest run of them as last found is
	// shorter, is passed over while looking for a block. A plain
	// finder's eligible is free (no filter of the request narrows it),
	// so the runs it finds are the rows' runs of free seats, and it
	// notes the longest in the hint.
	hint  *rowHint
	plain bool
}

// find lists candidate seat sets, best first: want of them when there
// are. Best means Count seats side by side in one row — the
// frontmost such row, then the block nearest the row's centre, blocks of
// a row not overlapping —; else, when split is set, the fewest rows,
// longest runs first. Under the strict orphan rule no block that would
// leave a seat alone is offered.
func (f blockFinder) find(want int, split bool) [][]uuid.UUID {
	all, free, eligible := f.all, f.free, f.eligible
	orphanFree := func(row []int32, take []uuid.UUID) bool {
		if !f.strict {
			return true
		}
		rs := make([]store.RowSeat, len(row))
		for i, p := range row {
			rs[i] = store.RowSeat{ID: all[p].ID, Number: all[p].Number, Free: free(p)}
		}
		t := map[uuid.UUID]bool{}
		for _, id := range take {
			t[id] = true
		}
		return len(store.NewOrphans(rs, t)) == 0
	}
	num := func(row []int32, i int) int { return all[row[i]].Number }
	// alone reports whether the seat at i of row (free, beside a block
	// being taken) would have no free neighbour left: its other neighbour,
	// at i+dir, is missing, not next in number, or not free.
	alone := func(row []int32, i, dir int) bool {
		if i < 0 || i >= len(row) || !free(row[i]) {
			return false
		}
		o := i + dir
		return o < 0 || o >= len(row) || num(row, o) != num(row, i)+dir || !free(row[o])
	}

	type block struct {
		rank   int // index into rows
		from   int // index into rows[rank]
		offset float64
	}
	var blocks []block
	type run struct {
		row  int // index into rows
		from int // index into rows[row]
		n    int
	}
	var runs []run
	var rows [][]int32 // the rows scanned, in order
	type cand struct {
		from   int
		offset float64
	}
	var cands []cand
	var taken []bool
	passed := false
	for ri, row := range f.rows {
		if len(blocks) >= want {
			break
		}
		if f.rowOK != nil && !f.rowOK(row) {
			continue
		}
		if h := f.hint; h != nil && (int(h.free[ri]) < f.count || h.runAt[ri] == h.ver[ri]+1 && int(h.run[ri]) < f.count) {
			passed = true
			continue
		}
		r := len(rows)
		longest := 0
		rows = append(rows, row)
		centre := float64(num(row, 0)+num(row, len(row)-1)) / 2
		cands = cands[:0]
		for i := 0; i < len(row); {
			j := i
			for j < len(row) && eligible(row[j]) && (j == i || num(row, j) == num(row, j-1)+1) {
				j++
			}
			if j == i {
				i++
				continue
			}
			runs = append(runs, run{row: r, from: i, n: j - i})
			longest = max(longest, j-i)
			for st := i; st+f.count <= j; st++ {
				end := st + f.count - 1
				if f.strict && ((st > 0 && num(row, st-1) == num(row, st)-1 && alone(row, st-1, -1)) ||
					(end+1 < len(row) && num(row, end+1) == num(row, end)+1 && alone(row, end+1, +1))) {
					continue
				}
				cands = append(cands, cand{from: st, offset: abs(float64(num(row, st)+num(row, end))/2 - centre)})
			}
			i = j
		}
		if f.hint != nil && f.plain {
			f.hint.run[ri], f.hint.runAt[ri] = int32(longest), f.hint.ver[ri]+1 // #nosec G115 -- a row's length
		}
		if len(cands) == 0 {
			continue
		}
		// The row's blocks nearest its centre first, keeping only blocks
		// that do not overlap a better one: the candidates a crowd spreads
		// over must not collide with each other.
		slices.SortStableFunc(cands, func(x, y cand) int { return cmp.Compare(x.offset, y.offset) })
		taken = slices.Grow(taken[:0], len(row))[:len(row)]
		clear(taken)
		for _, c := range cands {
			if slices.Contains(taken[c.from:c.from+f.count], true) {
				continue
			}
			for x := range f.count {
				taken[c.from+x] = true
			}
			blocks = append(blocks, block{rank: r, from: c.from, offset: c.offset})
		}
	}
	if len(blocks) > 0 {
		slices.SortStableFunc(blocks, func(x, y block) int {
			return cmp.Or(cmp.Compare(x.rank, y.rank), cmp.Compare(x.offset, y.offset))
		})
		// Only the blocks asked for are spelled out: a crowd's picks each
		// find a whole row's blocks, and take one of the first few.
		out := make([][]uuid.UUID, min(len(blocks), max(want, 1)))
		for i, bl := range blocks[:len(out)] {
			out[i] = make([]uuid.UUID, f.count)
			for x := range out[i] {
				out[i][x] = all[rows[bl.rank][bl.from+x]].ID
			}
		}
		return out
	}
	if !split {
		return nil
	}
	if passed {
		// A split takes runs of any length: look at every row.
		g := f
		g.hint = nil
		return g.find(want, split)
	}
	// No row has them side by side: the fewest rows, longest runs first,
	// each run taken from its start (or its end, if the start would leave
	// a seat alone).
	slices.SortStableFunc(runs, func(x, y run) int { return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.row, y.row)) })
	var ids []uuid.UUID
	for _, ru := range runs {
		need := f.count - len(ids)
		if need == 0 {
			break
		}
		row := rows[ru.row]
		k := min(need, ru.n)
		var part []uuid.UUID
		for _, from := range []int{ru.from, ru.from + ru.n - k} {
			cand := make([]uuid.UUID, k)
			for x := range cand {
				cand[x] = all[row[from+x]].ID
			}
			if orphanFree(row, cand) {
				part = cand
				break
			}
		}
		ids = append(ids, part...)
	}
	if len(ids) < f.count {
		return nil
	}
	return [][]uuid.UUID{ids}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

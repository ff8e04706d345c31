package hold

// Finding the best blocks of seats in an event's rows: the scan behind
// best available (docs/architecture.md#choosing-seats).

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// bestBlocks lists candidate seat sets, best first, from the hot cache:
// want of them when there are (rows are scanned front to back
// only until want blocks are found, so a big venue costs little). Seats
// claimed by other requests of this process count as taken, and holds in
// one row go together: on the fast path, this process's holds share one
// transaction (store.Holds.Create), which decides them in order. The
// caller holds ev.claimMu and ev.mu (read).
func bestBlocks(ev *eventState, a Actor, r Request, avoid map[uuid.UUID]bool, want int, now time.Time) [][]uuid.UUID {
	f := finder(ev, a, r, ev.all, ev.rows, avoid, nil, now)
	f.hint = &ev.hint
	blocks, _ := f.findFree(ev, r.Best.Section, want, true, true)
	return blocks
}

// findFree is find in the rows of the section labelled section, if set.
// Under the strict rule, on the Postgres-only path (where each request is a
// transaction of its own, and holds in one row are decided one at a time
// in Postgres), it looks only in rows no claim of this process is in
// unless busy is set; it reports wait when only such rows have blocks
// (and busy is not set): waiting here for one of them costs less than
// queueing for it in Postgres with a connection held. The caller holds
// ev.claimMu.
func (f blockFinder) findFree(ev *eventState, section string, want int, split, busy bool) (blocks [][]uuid.UUID, wait bool) {
	inSection := func(row []int32) bool {
		return section == "" || ev.sections[ev.sectionOf[f.all[row[0]].SectionID]].Label == section
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
func finder(ev *eventState, a Actor, r Request, all []store.Seat, rows [][]int32, avoid map[uuid.UUID]bool,
	taken func(uuid.UUID) bool, now time.Time) blockFinder {
	b := r.Best
	set := ev.settings.Load()
	back := heldBack(set, now) && !a.Staff() && !r.Accessible
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

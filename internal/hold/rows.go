package hold

// An event's rows as best available sees them: which seats are free, the
// claims of this process's requests in flight, and the rows they keep
// busy (docs/architecture.md#choosing-seats).

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/chart"
	"seatd/internal/store"
)

// rowKey names a row of an event.
type rowKey struct {
	section uuid.UUID
	row     string
}

func rowOf(st *store.Seat) rowKey { return rowKey{st.SectionID, st.Row} }

// freeAt says whether the seat at position p is available and not
// claimed; the caller holds mu.
func (e *eventState) freeAt(p int32) bool { return e.all[p].Status == store.Available && !e.claimed[p] }

// rowHint lets a crowd's best-available picks pass over rows without
// looking at their seats: per row of eventState.rows, how many of its
// seats are free (available and not claimed), a counter of changes to
// that, and the longest run of free seats side by side as last found at
// a value of the counter (runAt is that value plus one; 0: never).
// Under the strict orphan rule a row fills up to a few seats that no
// block can take, and every later pick would scan it again.
type rowHint struct {
	free       []int32
	ver, runAt []uint32
	run        []int32
}

// recount updates the row hint for the seat at p, which was free
// (freeAt) before the caller changed it; the caller holds mu, and
// claimMu or mu for writing.
func (e *eventState) recount(p int32, was bool) {
	if r := e.rowAt[p]; r >= 0 && was != e.freeAt(p) {
		if was {
			e.hint.free[r]--
		} else {
			e.hint.free[r]++
		}
		e.hint.ver[r]++
	}
}

// claim marks a pick's seats claimed and their rows busy; the caller
// holds claimMu and mu (read).
func (e *eventState) claim(ids []uuid.UUID) {
	for _, id := range ids {
		if i, ok := e.pos[id]; ok {
			was := e.freeAt(i)
			e.claimed[i] = true
			e.recount(i, was)
			e.busyRows[rowOf(&e.all[i])]++
		}
	}
}

// unclaim ends a best-available request's claim on its pick.
func (e *eventState) unclaim(ids []uuid.UUID) {
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, id := range ids {
		if i, ok := e.pos[id]; ok {
			was := e.freeAt(i)
			e.claimed[i] = false
			e.recount(i, was)
			k := rowOf(&e.all[i])
			if e.busyRows[k]--; e.busyRows[k] <= 0 {
				delete(e.busyRows, k)
			}
		}
	}
	if e.rowFreed != nil {
		close(e.rowFreed)
		e.rowFreed = nil
	}
}

// maxRowWait bounds how long a best-available request waits for a row
// nobody here is holding in before it queues in Postgres after all. The
// claims it waits for end within a transaction's time (statement
// timeouts bound it), so this is only a backstop: queueing in Postgres
// sooner, under load, turns into lock timeouts and blocks given up.
const maxRowWait = 30 * time.Second

// waitRow waits until a claim of this process ends (or ctx ends, or
// until deadline), for a request whose blocks are all in rows held in
// here now. It reports false once the deadline has passed.
func (e *eventState) waitRow(ctx context.Context, deadline time.Time) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	e.claimMu.Lock()
	if e.rowFreed == nil {
		e.rowFreed = make(chan struct{})
	}
	ch := e.rowFreed
	e.claimMu.Unlock()
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
}

// seatedRows groups the seats of seated sections into rows (see rowsOf).
func seatedRows(sections []store.Section, sectionOf map[uuid.UUID]int, seats []store.Seat) [][]int32 {
	return rowsOf(seats, func(st *store.Seat) bool { return sections[sectionOf[st.SectionID]].Kind != chart.GA })
}

// rowsOf groups seats in idx order (a row's seats are stored together)
// into rows of positions, each row by seat number, keeping the rows whose
// first seat keep accepts (nil: every row).
func rowsOf(seats []store.Seat, keep func(*store.Seat) bool) [][]int32 {
	var rows [][]int32
	for i := 0; i < len(seats); {
		j := i + 1
		for j < len(seats) && seats[j].SectionID == seats[i].SectionID && seats[j].Row == seats[i].Row {
			j++
		}
		if keep == nil || keep(&seats[i]) {
			row := make([]int32, 0, j-i)
			for k := i; k < j; k++ {
				row = append(row, int32(k)) // #nosec G115 -- an event has far fewer than 2^31 seats
			}
			slices.SortStableFunc(row, func(x, y int32) int { return cmp.Compare(seats[x].Number, seats[y].Number) })
			rows = append(rows, row)
		}
		i = j
	}
	return rows
}

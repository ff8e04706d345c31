package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestChangesLeaveOutKnownHolds: a feed read leaves out a seat whose last
// change is the creation of a hold the caller says it made (known), and
// only such a seat: another buyer's hold and a known hold released since
// come back, and so does every seat when nothing is known. One list
// serves every event of a read.
func TestChangesLeaveOutKnownHolds(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	st := a.Store
	tn := testenv.NewTenant(t, a, 2)
	org, user, other := tn.Org.ID, tn.Buyers[0].ID, tn.Buyers[1].ID
	ev := testenv.NewEvent(t, a, org, 1, 1, 6)
	ev2 := testenv.NewEvent(t, a, org, 1, 1, 2)
	seats, seats2 := testenv.SeatIDs(t, a, org, ev.ID), testenv.SeatIDs(t, a, org, ev2.ID)

	// The cursor before any change.
	_, from, err := st.Feed.Changes(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	hold := func(event, u, seat uuid.UUID) uuid.UUID {
		t.Helper()
		id := uuid.New()
		out, err := st.Holds.Create(ctx, store.HoldParams{Org: org, Event: event, User: u, Now: now,
			HeldUntil: now.Add(time.Minute), Source: "api",
			Seats: []store.HoldRequest{{SeatID: seat, HoldID: id, Fence: 1}}})
		if err != nil || len(out.Created) != 1 {
			t.Fatalf("hold: %+v, %v", out, err)
		}
		return id
	}
	mine0, mine1 := hold(ev.ID, user, seats[0]), hold(ev.ID, user, seats[1])
	hold(ev.ID, other, seats[2]) // not known: another process's
	released := hold(ev.ID, user, seats[3])
	if _, err := st.Holds.Release(ctx, org, released, user, false, ""); err != nil {
		t.Fatal(err)
	}
	elsewhere := hold(ev2.ID, user, seats2[0])
	known := []uuid.UUID{mine0, mine1, released, elsewhere}

	read := func(known []uuid.UUID) [][]uuid.UUID {
		t.Helper()
		cs, _, err := st.Feed.Changes(ctx, []store.FeedRead{{Org: org, Event: ev.ID, From: from}, {Org: org, Event: ev2.ID, From: from}}, known)
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]uuid.UUID, len(cs))
		for i, c := range cs {
			for _, x := range c.Changes {
				out[i] = append(out[i], x.Seat.ID)
			}
			slices.SortFunc(out[i], func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		}
		return out
	}
	sorted := func(ids ...uuid.UUID) []uuid.UUID {
		slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		return ids
	}
	if got, want := read(nil), [][]uuid.UUID{sorted(seats[0], seats[1], seats[2], seats[3]), {seats2[0]}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("nothing known: read %v, want %v", got, want)
	}
	// The known hold of the other event is left out there too: hold ids
	// are unique, so one list serves every event of a read.
	if got, want := read(known), [][]uuid.UUID{sorted(seats[2], seats[3]), nil}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("with known holds: read %v, want %v (another buyer's hold and the released seat)", got, want)
	}
}

// TestChangesReadTheLine: the feed returns a waitlist's joins and leaves
// (a leave by staff names the buyer, not the staff member) once, in
// order, to the event whose line they are, and nothing to another event.
func TestChangesReadTheLine(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	st := a.Store
	tn := testenv.NewTenant(t, a, 2)
	org, first, second := tn.Org.ID, tn.Buyers[0].ID, tn.Buyers[1].ID
	ev := testenv.NewEvent(t, a, org, 1, 1, 2)
	ev2 := testenv.NewEvent(t, a, org, 1, 1, 2)
	_, from, err := st.Feed.Changes(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	join := func(u uuid.UUID) store.WaitlistEntry {
		t.Helper()
		e, err := st.Waitlist.Join(ctx, store.WaitlistRequest{Org: org, Event: ev.ID, User: u, Seats: 1})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e1 := join(first)
	join(second)
	if _, _, err := st.Waitlist.Leave(ctx, org, e1.ID, tn.Organizer.ID, true); err != nil {
		t.Fatal(err)
	}
	reads := []store.FeedRead{{Org: org, Event: ev.ID, From: from}, {Org: org, Event: ev2.ID, From: from}}
	fs, at, err := st.Feed.Changes(ctx, reads, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.LineChange{{Action: store.ActionWaitlistJoined, User: first}, {Action: store.ActionWaitlistJoined, User: second},
		{Action: store.ActionWaitlistLeft, User: first}}
	if !slices.Equal(fs[0].Line, want) || len(fs[1].Line) != 0 || len(fs[0].Changes) != 0 {
		t.Fatalf("read %+v and %+v, want the line %+v for the first event only", fs[0], fs[1], want)
	}
	for i := range reads {
		reads[i].From = at
	}
	if fs, _, err = st.Feed.Changes(ctx, reads, nil); err != nil || len(fs[0].Line) != 0 {
		t.Fatalf("read again from the new cursor: %+v, %v; want nothing", fs, err)
	}
}

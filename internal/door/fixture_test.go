package door_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/ticket"
)

// fixture is an organization with an event of 40 seats, a door user, and
// a door on the app's pool and Redis. The tickets the tests scan are sold
// through the hold core, as buyers and the box office make them.
type fixture struct {
	a     *app.App
	tn    testenv.Tenant
	ev    store.Event
	door  *door.Door
	keys  *ticket.Keys
	staff hold.Actor // door staff

	mu    sync.Mutex
	seats []uuid.UUID // not sold yet
}

func actor(u store.User) hold.Actor {
	return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.Role(u.Role)}
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, nil) }

// newFixtureWith is newFixture on a process whose configuration mod
// changes.
func newFixtureWith(t *testing.T, mod func(*config.Config)) *fixture {
	t.Helper()
	a := testenv.App(t, mod)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 20)
	f := &fixture{a: a, tn: tn, ev: ev, seats: testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)}
	f.door, f.keys = newDoor(t, a)
	u, err := a.Accounts.Create(context.Background(), tn.Org.ID, "door-"+uuid.NewString()[:8]+"@example.com", testenv.Password, "door")
	if err != nil {
		t.Fatalf("create a door user: %v", err)
	}
	f.staff = actor(u)
	return f
}

// newDoor builds a door as a process would, on a's pool and Redis.
func newDoor(t *testing.T, a *app.App) (*door.Door, *ticket.Keys) {
	t.Helper()
	keys, err := ticket.NewKeys(store.NewTicketKeys(a.Pool), a.Cfg.TicketSecret)
	if err != nil {
		t.Fatal(err)
	}
	return door.New(store.NewCheckins(a.Pool), keys, a.Redis, door.Options{KeyPrefix: a.Cfg.KeyPrefix}), keys
}

func (f *fixture) take(t *testing.T, n int) []uuid.UUID {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seats) < n {
		t.Fatal("the fixture's event is sold out")
	}
	s := f.seats[:n]
	f.seats = f.seats[n:]
	return s
}

// buy makes a buyer's online booking of n seats.
func (f *fixture) buy(t *testing.T, n int) store.Booking {
	t.Helper()
	ctx := context.Background()
	b := actor(f.tn.Buyers[0])
	res, err := f.a.Holds.Hold(ctx, b, hold.Request{Event: f.ev.ID, Seats: f.take(t, n), Source: hold.SourceWeb})
	if err != nil {
		t.Fatalf("hold: %v", err)
	}
	ids := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		ids[i] = h.ID
	}
	bk, err := f.a.Holds.Purchase(ctx, b, f.ev.ID, uuid.NewString(), ids)
	if err != nil {
		t.Fatalf("purchase: %v", err)
	}
	return bk
}

// sell makes a box-office sale of n seats to a named customer.
func (f *fixture) sell(t *testing.T, n int, customer string) store.Booking {
	t.Helper()
	ctx := context.Background()
	box := actor(f.tn.BoxOffice)
	res, err := f.a.Holds.Hold(ctx, box, hold.Request{Event: f.ev.ID, Seats: f.take(t, n), Source: hold.SourceBoxOffice,
		Customer: &store.Customer{Name: customer, Email: "customer@example.com"}, Until: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("hold for a customer: %v", err)
	}
	ids := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		ids[i] = h.ID
	}
	bk, err := f.a.BoxOffice.Sell(ctx, box, f.ev.ID, uuid.NewString(), ids, "card")
	if err != nil {
		t.Fatalf("sell: %v", err)
	}
	return bk
}

// cancel cancels one ticket of a booking at the box office.
func (f *fixture) cancel(t *testing.T, b store.Booking, tk store.Ticket) {
	t.Helper()
	if _, err := f.a.BoxOffice.Cancel(context.Background(), actor(f.tn.BoxOffice), b.ID, []uuid.UUID{tk.ID}, "refund"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
}

// code is a ticket's code.
func (f *fixture) code(t *testing.T, tk store.Ticket) string {
	t.Helper()
	c, err := f.keys.Code(context.Background(), ticket.Claims{Org: f.tn.Org.ID, Event: f.ev.ID, Ticket: tk.ID, Seat: tk.SeatID})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// count counts rows of one of the door's tables for the fixture's event.
func (f *fixture) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := f.a.Pool.QueryRow(context.Background(), query, f.tn.Org.ID, f.ev.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

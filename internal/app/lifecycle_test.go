package app_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/webhook"
	"seatd/web"
)

// TestServeLeavesNoGoroutine: a served process whose every background job
// did some work — the notifier, the follower and warmer (an event put on
// sale, its warm after publishing), the waitlist worker (an offer), the
// webhook worker (a delivery), the web server's listeners — leaves no
// goroutine behind once Serve returned and the app is closed.
func TestServeLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	// Registered first, so it runs after every other cleanup (the app's
	// Close, the receiver's server). scs.New starts the cleanup goroutine
	// of a default memory store (a tick a minute) that web replaces at
	// once; scs has no race-free way to stop it.
	t.Cleanup(func() {
		goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("github.com/alexedwards/scs/v2/memstore.(*MemStore).startCleanup"))
	})
	a := testenv.App(t, func(c *config.Config) { c.PGMaxConns = 8 })
	var hooks atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hooks.Add(1) }))
	t.Cleanup(receiver.Close)

	srv := web.New(web.Deps{Cfg: a.Cfg, Log: a.Log, Pool: a.Pool, Redis: a.Redis, Store: a.Store,
		Engine: a.Engine, Holds: a.Holds, BoxOffice: a.BoxOffice, Events: a.Events, Waitlist: a.Waitlist, Monitor: a.Monitor,
		Accounts: a.Accounts, Notifier: a.Notifier, Registry: a.Registry,
		Door: a.Door, Tickets: a.TicketKeys, Details: a.BookingDetails})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, ln, srv, srv.Shutdown, srv) }()

	bg := context.Background()
	tn := testenv.NewTenant(t, a, 2)
	if _, err := webhook.NewEndpoints(a.Store.Webhooks, true).Create(bg, tn.Org.ID, receiver.URL, webhook.Types); err != nil {
		t.Fatal(err)
	}
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	onSale := string(store.EventOnSale)
	organizer := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := a.Events.Update(bg, organizer, ev.ID, hold.EventInput{Status: &onSale}); err != nil {
		t.Fatal(err)
	}
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	holder := hold.Actor{Org: tn.Org.ID, User: tn.Buyers[0].ID, Role: hold.RoleBuyer}
	waiter := hold.Actor{Org: tn.Org.ID, User: tn.Buyers[1].ID, Role: hold.RoleBuyer}
	res, err := a.Holds.Hold(bg, holder, hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Waitlist.Join(bg, waiter, ev.ID, hold.WaitFor{Count: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Release(bg, holder, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "the seat offered to the waiting buyer", func() bool {
		hs, err := a.Holds.Mine(bg, waiter, ev.ID)
		return err == nil && len(hs) == 1
	})
	testsvc.Eventually(t, 5*time.Second, "webhook deliveries", func() bool { return hooks.Load() > 0 })
	hc := &http.Client{Transport: &http.Transport{}}
	res2, err := hc.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = res2.Body.Close()
	hc.CloseIdleConnections()

	stop()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
}

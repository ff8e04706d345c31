package webhook_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/webhook"
)

// hangingReceiver accepts connections and never answers: a receiver that
// is down in the way that costs a sender most (each attempt waits out its
// timeout).
func hangingReceiver(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String() + "/hook"
}

// TestFairClaims: one organization's endpoint is down (it accepts and
// never answers, so each attempt waits out its 3 s timeout) with a
// backlog of 2 000 due deliveries; another organization's changes still
// reach its receiver within 2 s each (less than one attempt's timeout:
// they wait neither for the backlog nor for the attempts to the dead
// endpoint), while most of the backlog is still waiting. Claimed oldest
// first across every organization, as before, the other's deliveries came
// after the whole backlog: 2 000 attempts of 3 s each, 8 at a time.
func TestFairClaims(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, func(c *config.Config) {
		fastRetries(c)
		c.DatabaseURL = testsvc.OwnDatabase(t, "webhook_fair_claims") // only this test's worker claims
		c.WebhookTimeout = 3 * time.Second
		c.WebhookConcurrency = 8 // batches of 32, and 2 probes
	})
	testenv.Background(t, a)
	down, up := testenv.NewTenant(t, a, 0), testenv.NewTenant(t, a, 0)
	evDown := testenv.NewEvent(t, a, down.Org.ID, 1, 1, 1)
	evUp := testenv.NewEvent(t, a, up.Org.ID, 1, 1, 5)
	ctx := context.Background()
	hooks := webhook.NewEndpoints(a.Store.Webhooks, true)
	dead, err := hooks.Create(ctx, down.Org.ID, hangingReceiver(t), webhook.Types)
	if err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t)
	r.register(t, a, up.Org.ID)

	// The dead endpoint has failed before, and has a backlog.
	if _, err := a.Holds.SetBlocked(ctx, actor(down.Organizer), evDown.ID, testenv.SeatIDs(t, a, down.Org.ID, evDown.ID)[0], true, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "the dead endpoint's first attempt failed", func() bool {
		ds, err := a.Store.Webhooks.Deliveries(ctx, down.Org.ID, dead.ID, 0, 1)
		return err == nil && len(ds) == 1 && ds[0].LastError != nil
	})
	const backlog = 2000
	if _, err := a.Pool.Exec(ctx, `
		INSERT INTO webhook_deliveries (org_id, endpoint_id, audit_id, type, event_id, data)
		SELECT $1, $2, -n, 'seat.blocked', $3, '{}' FROM generate_series(1, $4) n`,
		down.Org.ID, dead.ID, evDown.ID, backlog); err != nil {
		t.Fatal(err)
	}

	seats := testenv.SeatIDs(t, a, up.Org.ID, evUp.ID)
	for i, seat := range seats {
		start := time.Now()
		if _, err := a.Holds.SetBlocked(ctx, actor(up.Organizer), evUp.ID, seat, true, ""); err != nil {
			t.Fatal(err)
		}
		testsvc.Eventually(t, 2*time.Second, "the other organization's change delivered", func() bool { return len(r.received()) == i+1 })
		t.Logf("change %d delivered after %s", i+1, time.Since(start).Round(time.Millisecond))
	}
	var pending int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND state = 'pending'`,
		dead.ID).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending < backlog/2 {
		t.Fatalf("%d of the dead endpoint's %d deliveries pending: the backlog was not what the others waited behind", pending, backlog)
	}
	t.Logf("%d changes of one organization delivered while %d of another's were waiting on a dead endpoint", len(seats), pending)
}

// TestEndpointQuota: an organization has at most
// Quotas.WebhookEndpoints endpoints (20 by default): the next is refused
// with a 409 naming the quota, also when two are created at once at the
// edge (one passes); deleting one makes room.
func TestEndpointQuota(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 0)
	ctx := context.Background()
	hooks := webhook.NewEndpoints(a.Store.Webhooks, true)
	url := "http://127.0.0.1:9999/hook"
	for range 19 {
		if _, err := hooks.Create(ctx, tn.Org.ID, url, []string{"seat.blocked"}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := hooks.Create(ctx, tn.Org.ID, url, []string{"seat.blocked"})
			errs <- err
		}()
	}
	var refused []error
	for range 2 {
		if err := <-errs; err != nil {
			refused = append(refused, err)
		}
	}
	if len(refused) != 1 {
		t.Fatalf("two creations at the edge of the quota: %d refused (%v), want 1", len(refused), refused)
	}
	e, ok := apperr.As(refused[0])
	if !ok || e.Code != apperr.Conflict || e.Fields["quota"] != "webhooks: at most 20" {
		t.Fatalf("refusal %v, want a conflict naming the quota", refused[0])
	}
	es, err := a.Store.Webhooks.Endpoints(ctx, tn.Org.ID)
	if err != nil || len(es) != 20 {
		t.Fatalf("%d endpoints (%v), want 20", len(es), err)
	}
	if err := a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, es[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.Create(ctx, tn.Org.ID, url, []string{"seat.blocked"}); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	t.Cleanup(func() {
		es, _ := a.Store.Webhooks.Endpoints(ctx, tn.Org.ID)
		for _, e := range es {
			_ = a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, e.ID)
		}
	})
}

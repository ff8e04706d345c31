package app_test

import (
	"context"
	"crypto/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/internal/notify"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/webhook"
)

// heard records what a notifier hears on a channel.
type heard struct {
	mu       sync.Mutex
	payloads []string
}

func listen(n *notify.Notifier, channel string) *heard {
	h := &heard{}
	n.Listen(channel, func(p string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.payloads = append(h.payloads, p)
	})
	return h
}

func (h *heard) count() int { return len(h.all()) }

func (h *heard) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.payloads)
}

// TestStatementsAnnounceWork: the statements that queue waitlist work or
// webhook deliveries, or revoke an API key, announce it on the channel
// its consumers listen to, in their transaction (migration 029); of two
// transactions queuing work at once, only the first announces it.
func TestStatementsAnnounceWork(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	n := testenv.Notifier(t, a)
	waitlist, deliveries, revoked := listen(n, hold.WaitlistChannel), listen(n, webhook.DeliveriesChannel), listen(n, auth.RevokedChannel)
	ready := make(chan struct{})
	var once sync.Once
	n.OnReady(func() { once.Do(func() { close(ready) }) })
	<-ready
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	buyer := hold.Actor{Org: tn.Org.ID, User: tn.Buyers[0].ID, Role: hold.RoleBuyer}
	organizer := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}

	if _, err := a.Waitlist.Join(ctx, buyer, ev.ID, hold.WaitFor{Count: 1}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "waitlist work announced", func() bool { return waitlist.count() == 1 })

	ep, err := webhook.NewEndpoints(a.Store.Webhooks, true).Create(ctx, tn.Org.ID, "http://127.0.0.1:9/hook", webhook.Types)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, organizer, ev.ID, seats[0], true, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "a delivery announced", func() bool { return deliveries.count() == 1 })
	ds, err := a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ep.ID, 0, 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %v %v", ds, err)
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed' WHERE org_id = $1 AND public_id = $2`, tn.Org.ID, ds[0].PublicID); err != nil {
		t.Fatal(err)
	}
	if err := a.Store.Webhooks.Redeliver(ctx, tn.Org.ID, ep.ID, ds[0].PublicID); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "a redelivery announced", func() bool { return deliveries.count() == 2 })

	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	key, err := a.Store.Accounts.CreateAPIKey(ctx, tn.Org.ID, tn.Organizer.ID, store.NewAPIKey{Name: "k", Role: "buyer", Scopes: []string{"read"}, Hash: hash, Hint: "seatd_x"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // revoked once, announced once
		if _, err := a.Store.Accounts.RevokeAPIKey(ctx, tn.Org.ID, key.ID); err != nil {
			t.Fatal(err)
		}
	}
	testsvc.Eventually(t, 5*time.Second, "the revocation announced", func() bool { return revoked.count() == 1 })

	// Two transactions queue work at once: the first announces, the second
	// leaves it to the first, even when it commits first.
	first, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(ctx) }()
	second, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Rollback(ctx) }()
	const queue = `INSERT INTO waitlist_work (org_id, event_id) VALUES ($1, $2)`
	if _, err := first.Exec(ctx, queue, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Exec(ctx, queue, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: once a marker committed after
	// both arrives, so has anything they announced.
	if _, err := a.Pool.Exec(ctx, `SELECT pg_notify($1, 'marker')`, hold.WaitlistChannel); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "the marker", func() bool { return slices.Contains(waitlist.all(), "marker") })
	if got := waitlist.all(); len(got) != 3 {
		t.Fatalf("waitlist announcements %q, want the join's, one for the two transactions, the marker", got)
	}
	if got := revoked.all(); !slices.Equal(got, []string{key.ID.String()}) {
		t.Fatalf("revocation payloads %v, want the key's id", got)
	}
}

package ticket_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/ticket"
)

const secret = "a test secret of at least thirty-two characters"

func newKeys(t *testing.T, st ticket.KeyStore, secret string) *ticket.Keys {
	t.Helper()
	k, err := ticket.NewKeys(st, secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeys: an event's key pair is made on first use, once even when
// several processes ask at once, and is the same after a restart; codes
// it signs verify; another organization's event is not found; a short
// secret is refused, and a key sealed with another secret, or moved to
// another event, does not open.
func TestKeys(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	other := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	st := store.NewTicketKeys(a.Pool)

	if _, err := ticket.NewKeys(st, "short"); err == nil {
		t.Fatal("a short secret was taken")
	}

	// Four processes ask for the event's key at once: one pair is made.
	pubs := make([]string, 4)
	var wg sync.WaitGroup
	for i := range pubs {
		wg.Go(func() {
			pub, err := newKeys(t, st, secret).Public(ctx, tn.Org.ID, ev.ID)
			if err != nil {
				t.Error(err)
				return
			}
			pubs[i] = string(pub)
		})
	}
	wg.Wait()
	for _, p := range pubs[1:] {
		if p != pubs[0] || len(p) != 32 {
			t.Fatalf("processes got different public keys: %x", pubs)
		}
	}

	k := newKeys(t, st, secret)
	c := ticket.Claims{Org: tn.Org.ID, Event: ev.ID, Ticket: uuid.New(), Seat: uuid.New()}
	code, err := k.Code(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// Another process (a restart) signs the same code and verifies it.
	k2 := newKeys(t, st, secret)
	if again, err := k2.Code(ctx, c); err != nil || again != code {
		t.Fatalf("code after a restart %q, %v; want %q", again, err, code)
	}
	if got, err := k2.Verify(ctx, tn.Org.ID, ev.ID, code); err != nil || got != c {
		t.Fatalf("verify: %+v, %v", got, err)
	}
	if _, err := k2.Verify(ctx, other.Org.ID, ev.ID, code); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("verify as another organization: %v, want not found", err)
	}
	if _, err := k.Public(ctx, other.Org.ID, ev.ID); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("another organization's event: %v, want not found", err)
	}
	if _, err := k.Public(ctx, tn.Org.ID, uuid.New()); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("no such event: %v, want not found", err)
	}

	// The private key is not stored in the clear.
	var public, sealed []byte
	if err := a.Pool.QueryRow(ctx, `SELECT public_key, sealed_seed FROM ticket_keys WHERE org_id = $1 AND event_id = $2`,
		tn.Org.ID, ev.ID).Scan(&public, &sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), string(public)) || len(sealed) != 12+32+16 {
		t.Fatalf("sealed seed %x (%d bytes)", sealed, len(sealed))
	}

	if _, err := newKeys(t, st, secret+"!").Public(ctx, tn.Org.ID, ev.ID); err == nil || !strings.Contains(err.Error(), "SEATD_TICKET_SECRET") {
		t.Fatalf("another secret: %v, want a refusal naming SEATD_TICKET_SECRET", err)
	}
	// A sealed key copied to another event's row does not open there.
	ev2 := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	if _, err := a.Pool.Exec(ctx, `INSERT INTO ticket_keys (org_id, event_id, public_key, sealed_seed) VALUES ($1, $2, $3, $4)`,
		tn.Org.ID, ev2.ID, public, sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := newKeys(t, st, secret).Public(ctx, tn.Org.ID, ev2.ID); err == nil {
		t.Fatal("a key moved to another event opened")
	}
}

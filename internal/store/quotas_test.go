package store_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestQuotas: an organization has at most its quota of charts, open
// events, API keys and webhook endpoints (SEATD_QUOTA_*, 3 each here).
// The next creation is refused with a 409 naming the quota, also when two
// creations race at the edge (exactly one passes); another organization
// is not affected; deleting, closing or revoking one makes room.
func TestQuotas(t *testing.T) {
	t.Parallel()
	const quota = 3
	a := testenv.App(t, func(c *config.Config) {
		c.QuotaCharts, c.QuotaEvents, c.QuotaAPIKeys, c.QuotaWebhooks = quota, quota, quota, quota
	})
	ctx := context.Background()
	tn, other := testenv.NewTenant(t, a, 0), testenv.NewTenant(t, a, 0)
	small := chart.Chart{Name: "Small", Sections: []chart.Section{{Label: "G", Name: "Standing", Kind: chart.GA, Capacity: 2}}}

	// Events are made from a chart saved before the charts' own run.
	base, err := a.Store.Charts.Save(ctx, tn.Org.ID, uuid.Nil, small)
	if err != nil {
		t.Fatal(err)
	}
	spec := store.EventSpec{Name: "Show", Venue: "Hall", StartsAt: time.Now().Add(48 * time.Hour), TimeZone: "UTC"}
	kinds := []struct {
		name   string
		key    string
		create func(org uuid.UUID) (uuid.UUID, error)
		free   func(org, id uuid.UUID) error
		have   int // made before the run
	}{
		{"charts", "charts", func(org uuid.UUID) (uuid.UUID, error) {
			v, err := a.Store.Charts.Save(ctx, org, uuid.Nil, small)
			return v.ChartID, err
		}, func(org, id uuid.UUID) error { return a.Store.Charts.Delete(ctx, org, id) }, 1},
		{"events", "events", func(org uuid.UUID) (uuid.UUID, error) {
			v := base
			if org != tn.Org.ID {
				if v, err = a.Store.Charts.Save(ctx, org, uuid.Nil, small); err != nil {
					return uuid.Nil, err
				}
			}
			e, err := a.Store.Events.CreateFromChart(ctx, org, uuid.Nil, v, spec, nil)
			return e.ID, err
		}, func(org, id uuid.UUID) error {
			_, err := a.Store.Events.Update(ctx, org, id, uuid.Nil, func(cur store.Event) (store.EventUpdate, error) {
				return store.EventUpdate{Spec: cur.EventSpec, From: cur.Status, To: store.EventClosed}, nil
			})
			return err
		}, 0},
		{"API keys", "api_keys", func(org uuid.UUID) (uuid.UUID, error) {
			by := tn.Organizer.ID
			if org != tn.Org.ID {
				by = other.Organizer.ID
			}
			k, err := a.Store.Accounts.CreateAPIKey(ctx, org, by, store.NewAPIKey{Name: "key", Role: "buyer", Scopes: []string{"read"}, Hash: []byte(rand.Text()), Hint: "sk_x"})
			return k.ID, err
		}, func(org, id uuid.UUID) error { _, err := a.Store.Accounts.RevokeAPIKey(ctx, org, id); return err }, 0},
		{"webhook endpoints", "webhooks", func(org uuid.UUID) (uuid.UUID, error) {
			e, err := a.Store.Webhooks.CreateEndpoint(ctx, org, nil, "http://127.0.0.1:9999/hook", []string{"seat.blocked"}, "whsec_x")
			return e.ID, err
		}, func(org, id uuid.UUID) error { return a.Store.Webhooks.DeleteEndpoint(ctx, org, id) }, 0},
	}
	for _, k := range kinds {
		var ids []uuid.UUID
		for range quota - 1 - k.have {
			id, err := k.create(tn.Org.ID)
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			ids = append(ids, id)
		}
		// Two at once at the edge: one passes.
		type result struct {
			id  uuid.UUID
			err error
		}
		results := make(chan result, 2)
		for range 2 {
			go func() {
				id, err := k.create(tn.Org.ID)
				results <- result{id, err}
			}()
		}
		var refused []error
		for range 2 {
			r := <-results
			if r.err != nil {
				refused = append(refused, r.err)
			} else {
				ids = append(ids, r.id)
			}
		}
		if len(refused) != 1 {
			t.Fatalf("%s: two creations at the edge of the quota, %d refused (%v); want 1", k.name, len(refused), refused)
		}
		e, ok := apperr.As(refused[0])
		if !ok || e.Code != apperr.Conflict || e.Fields["quota"] != k.key+": at most 3" {
			t.Fatalf("%s: refused with %v, want a conflict naming the quota", k.name, refused[0])
		}
		if _, err := k.create(tn.Org.ID); apperr.CodeOf(err) != apperr.Conflict {
			t.Fatalf("%s: one past the quota: %v, want a conflict", k.name, err)
		}
		if _, err := k.create(other.Org.ID); err != nil {
			t.Fatalf("%s: another organization: %v", k.name, err)
		}
		if err := k.free(tn.Org.ID, ids[0]); err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if _, err := k.create(tn.Org.ID); err != nil {
			t.Fatalf("%s: after making room: %v", k.name, err)
		}
	}
}

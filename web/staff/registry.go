package staff

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/views"
)

// The dashboard's registry panel: whether the hot cache, Redis and Postgres
// agree on the active holds, the reconcile button, and the live checks.

// registryVM reads the tiers' agreement; a failure shows in the panel.
func (p *Dashboard) registryVM(ctx context.Context, a hold.Actor, event uuid.UUID, msg string) views.Registry {
	out := views.Registry{EventID: event.String(), Message: msg, CheckedAt: time.Now()}
	reg, at, err := p.checks.Status(ctx, a, event)
	if err != nil {
		out.Err = p.internalText(ctx, "registry status", err)
		return out
	}
	out.CheckedAt = at
	return registryView(out, reg)
}

func registryView(out views.Registry, reg hold.Registry) views.Registry {
	out.HotCache, out.Redis, out.Postgres = reg.HotCache, reg.Redis, reg.Postgres
	out.Consistent, out.Breaker, out.RedisError = reg.Consistent, reg.Breaker, reg.RedisError
	return out
}

// Registry is the registry panel alone.
func (p *Dashboard) Registry(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.RegistryPanel(p.registryVM(r.Context(), a, ev.ID, ""), false))
	return nil
}

// Reconcile rebuilds Redis and the hot caches from Postgres and
// shows the outcome in the panel (a failure too: htmx would not swap an
// error status, and the organizer must see it). A second click within the
// cooldown shows the first one's outcome and time (see api.RegistryFlights).
func (p *Dashboard) Reconcile(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	out := views.Registry{EventID: ev.ID.String(), CheckedAt: time.Now()}
	reg, at, err := p.checks.Reconciled(ctx, a, ev.ID)
	if err != nil {
		out = p.registryVM(ctx, a, ev.ID, "Reconcile failed: "+p.internalText(ctx, "reconcile", err))
	} else {
		out.CheckedAt = at
		out = registryView(out, reg)
		out.Message = fmt.Sprintf("Reconciled at %s: Redis and the hot caches were rebuilt from Postgres (%d active %s).",
			out.CheckedAt.UTC().Format("15:04:05 MST"), reg.Postgres, plural(reg.Postgres, "hold", "holds"))
	}
	p.page(w, r, ev, views.RegistryPanel(out, false))
	return nil
}

// registryCheck is the last live check of an event's registry.
type registryCheck struct {
	at           time.Time
	inconsistent bool
}

const (
	// registryEvery spaces the dashboard's live registry checks: each
	// reads every active hold from Postgres and Redis.
	registryEvery = 5 * time.Second
	// registryConfirm is how long a disagreement must last before a live
	// check shows it: a hold between its Redis lock and its commit is in
	// Redis only for milliseconds, which is not an inconsistency.
	registryConfirm = time.Minute
)

// liveRegistry checks the registry for a dashboard frame at most every
// registryEvery. A disagreement is shown only when the check before (at
// most registryConfirm earlier) found one too; until then the panel keeps
// what it showed.
func (p *Dashboard) liveRegistry(ctx context.Context, a hold.Actor, event uuid.UUID, now time.Time) (views.Registry, bool) {
	key := [2]uuid.UUID{a.Org, event}
	p.mu.Lock()
	last, ok := p.registry[key]
	if ok && now.Sub(last.at) < registryEvery {
		p.mu.Unlock()
		return views.Registry{}, false
	}
	prev := ok && last.inconsistent && now.Sub(last.at) <= registryConfirm
	p.registry[key] = &registryCheck{at: now, inconsistent: last != nil && last.inconsistent}
	p.mu.Unlock()

	reg, _, err := p.checks.Status(ctx, a, event)
	if err != nil {
		p.log.Warn("live registry check", "org", a.Org, "event", event, "err", err)
		return views.Registry{}, false
	}
	p.mu.Lock()
	p.registry[key] = &registryCheck{at: now, inconsistent: !reg.Consistent}
	p.mu.Unlock()
	if !reg.Consistent && !prev {
		return views.Registry{}, false
	}
	return registryView(views.Registry{EventID: event.String(), CheckedAt: now}, reg), true
}

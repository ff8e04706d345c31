package hold

// Events: creating an event from a chart, changing its settings and
// status along its lifecycle, deleting a draft, and reading its settings
// and prices as the hot cache has them
// (docs/architecture.md#charts-and-events).

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Events creates, changes and deletes events, and reads their settings.
type Events struct {
	e      *Engine
	warmer *Warmer
}

// NewEvents builds the events' job on the engine; an event put on sale
// is warmed by warmer.
func NewEvents(e *Engine, warmer *Warmer) *Events { return &Events{e: e, warmer: warmer} }

// Create creates a draft event of the organizer's organization from
// the newest version of one of its charts. Every problem of the input is
// reported at once; nothing is written unless it is all valid.
func (es *Events) Create(ctx context.Context, a Actor, in EventInput) (store.Event, error) {
	if a.Role != RoleOrganizer {
		return store.Event{}, apperr.E(apperr.Forbidden, "only organizers can create events")
	}
	f := eventErrors{}
	if in.Status != nil {
		f["status"] = "a new event is a draft; publish it with PATCH"
	}
	var spec store.EventSpec
	f.apply(in, &spec)
	f.prices(in.Prices)
	if in.OnSaleAt == nil {
		f["on_sale_at"] = "is required"
	}
	if in.SalesEndAt == nil {
		f["sales_end_at"] = "is required"
	}
	var chartID uuid.UUID
	if in.ChartID == nil {
		f["chart_id"] = "is required"
	} else if id, err := uuid.Parse(*in.ChartID); err != nil {
		f["chart_id"] = "must be a UUID"
	} else {
		chartID = id
	}
	if chartID == uuid.Nil {
		return store.Event{}, f.err()
	}
	// The chart is read even when other fields are wrong, so its prices
	// are checked too and every problem is reported at once.
	v, err := es.e.store.Charts.LatestVersion(ctx, a.Org, chartID)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound && len(f) > 0 {
			f["chart_id"] = "is not a chart of this organization"
			return store.Event{}, f.err()
		}
		return store.Event{}, err // another org's chart is not found either
	}
	priced := map[string]bool{}
	for _, p := range in.Prices {
		priced[p.Category] = true
	}
	known := map[string]bool{}
	for _, c := range v.Layout.Categories {
		known[c.Key] = true
	}
	for i, p := range in.Prices {
		if !known[p.Category] {
			f[fmt.Sprintf("prices[%d].category", i)] = fmt.Sprintf("%q is not a category of the chart", p.Category)
		}
	}
	for key := range store.ChartCategoriesUsed(v.Layout) {
		if !priced[key] {
			f["prices"] = fmt.Sprintf("category %q is used by seats of the chart and needs a price", key)
		}
	}
	if err := f.err(); err != nil {
		return store.Event{}, err
	}
	return es.e.store.Events.CreateFromChart(ctx, a.Org, a.User, v, spec, in.Prices)
}

// Update changes an event of the organizer's organization: any field,
// and its status along the lifecycle (draft → on sale → closed, or draft
// → closed; anything else is a conflict). Every process's cached copy of
// the event's hold settings follows (see Follower.reloadSettings).
func (es *Events) Update(ctx context.Context, a Actor, id uuid.UUID, in EventInput) (store.Event, error) {
	if a.Role != RoleOrganizer {
		return store.Event{}, apperr.E(apperr.Forbidden, "only organizers can change events")
	}
	e, err := es.e.store.Events.Update(ctx, a.Org, id, a.User, func(cur store.Event) (store.EventUpdate, error) {
		f := eventErrors{}
		if in.ChartID != nil {
			f["chart_id"] = "an event keeps the chart it was made from"
		}
		u := store.EventUpdate{Spec: cur.EventSpec, Prices: in.Prices, From: cur.Status, To: cur.Status}
		f.apply(in, &u.Spec)
		f.prices(in.Prices)
		if in.Status != nil {
			to := store.EventStatus(*in.Status)
			switch to {
			case store.EventDraft, store.EventOnSale, store.EventClosed:
			default:
				f["status"] = `must be "on_sale" or "closed"`
			}
			u.To = to
		}
		if err := f.err(); err != nil {
			return u, err
		}
		if u.To != u.From && !transitions[[2]store.EventStatus{u.From, u.To}] {
			return u, apperr.E(apperr.Conflict, "an event that is %s cannot become %s", u.From, u.To)
		}
		return u, nil
	})
	if err != nil {
		return store.Event{}, err
	}
	if ev := es.e.cached(a.Org, id); ev != nil {
		ev.setSettings(e)
	}
	es.e.publishSettings(ctx, a.Org, id)
	if e.Status == store.EventOnSale {
		// Loaded before its first buyer, here and, announced, on every
		// other process (Warmer.Run); within their warm interval if the
		// announcement is lost, or on its first request.
		if err := es.e.bus.Publish(context.WithoutCancel(ctx), es.e.locks.Published(), []byte(a.Org.String()+":"+id.String())); err != nil {
			es.e.log.Warn("announce a published event", "org", a.Org, "event", id, "err", err)
		}
		es.e.background(func(ctx context.Context) {
			if err := es.warmer.Warm(ctx, a.Org, id); err != nil && ctx.Err() == nil {
				es.e.log.Warn("warm a published event", "org", a.Org, "event", id, "err", err)
				es.e.m.BackgroundErrors.WithLabelValues("warm").Inc()
			}
		})
	}
	return e, nil
}

// Delete deletes a draft of the organizer's organization that nobody
// acted on (store.Events.Delete says what that means; anything else is a
// conflict). This process forgets the event at once; the others when the
// message arrives, or at their follower's next round, whose settings read
// no longer finds it.
func (es *Events) Delete(ctx context.Context, a Actor, id uuid.UUID) error {
	if a.Role != RoleOrganizer {
		return apperr.E(apperr.Forbidden, "only organizers can delete events")
	}
	if err := es.e.store.Events.Delete(ctx, a.Org, id, a.User); err != nil {
		return err
	}
	if ev := es.e.cached(a.Org, id); ev != nil {
		es.e.evict(ev)
	}
	es.e.publishSettings(ctx, a.Org, id)
	// Its Redis keys (the sync mark and fence a load wrote) go too. A
	// process syncing the event at this very moment may write them again;
	// they are a few small keys, and nothing reads them.
	if _, err := call(es.e.redis, func() (struct{}, error) { return struct{}{}, es.e.locks.Forget(ctx, a.Org, id) }); err != nil {
		es.e.log.Warn("forget a deleted event's redis keys", "org", a.Org, "event", id, "err", err)
	}
	return nil
}

// Prices returns an event's categories by key from the hot cache (the
// tenancy gate applies).
func (es *Events) Prices(ctx context.Context, a Actor, event uuid.UUID) (map[string]store.Category, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	cats := ev.settings.Load().Categories
	out := make(map[string]store.Category, len(cats))
	for _, c := range cats {
		out[c.Key] = c
	}
	return out, nil
}

// Settings returns the event as the hot cache has it: status, sales
// window, hold settings and prices (the tenancy gate applies).
func (es *Events) Settings(ctx context.Context, a Actor, event uuid.UUID) (store.Event, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return store.Event{}, err
	}
	return *ev.settings.Load(), nil
}

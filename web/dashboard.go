package web

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/live"
	"seatd/web/render"
)

// The organizer's dashboard: occupancy with its check against Postgres,
// the expiry forecast, the occupancy chart and the activity feed, and the
// dashboard's live frame.

const (
	// forecastWindow is the dashboard's "expire in the next ..." window.
	forecastWindow = 2 * time.Minute
	// chartSpan is how far back the occupancy chart reaches.
	chartSpan = 2 * time.Hour
)

func (s *staffPages) dashboardPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	occ, err := s.deps.Monitor.PaidOccupancy(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	d := views.Dashboard{EventID: ev.ID.String(), EventName: ev.Name, Mode: s.mode(),
		Occupancy: occupancyVM(ev.ID, occ), Verify: s.verify(ctx, a, ev.ID), Registry: s.registryVM(ctx, a, ev.ID, "")}
	if d.Forecast, err = s.forecast(ctx, a.Org, ev.ID, now); err != nil {
		return err
	}
	snaps, err := s.deps.Monitor.Snapshots(ctx, a, ev.ID, now.Add(-chartSpan))
	if err != nil {
		return err
	}
	d.Chart = views.NewChart(chartPoints(snaps, occ.Counts, now))
	if d.Feed, err = s.recentFeed(ctx, a, ev.ID); err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.DashboardPage(s.render.Meta(r, ev.Name+" · dashboard"), d))
	return nil
}

func occupancyVM(event uuid.UUID, o hold.Occupancy) views.Occupancy {
	out := views.Occupancy{EventID: event.String(), Counts: countsVM(o.Counts), Sections: make([]views.SectionCounts, len(o.Sections))}
	for i, sec := range o.Sections {
		out.Sections[i] = views.SectionCounts{Label: sec.Label, Name: sec.Name, Standing: sec.Standing, Counts: countsVM(sec.Counts)}
	}
	for _, c := range o.Categories {
		name := c.Name
		if c.Key == "" {
			name = "No category"
		}
		sold := render.Price(c.RevenueSold, c.Currency)
		for _, cur := range slices.Sorted(maps.Keys(c.RevenueSoldOther)) {
			sold += " + " + render.Price(c.RevenueSoldOther[cur], cur)
		}
		out.Categories = append(out.Categories, views.CategoryCounts{Name: name, Price: render.Price(c.PriceMinor, c.Currency),
			RevenueSold: sold, RevenueHeld: render.Price(c.RevenueHeld, c.Currency), Counts: countsVM(c.Counts)})
	}
	return out
}

// verify checks the live counters against a recount in Postgres. The
// counters are read before and after the recount: a change committed
// meanwhile makes one of them differ, but not both.
func (s *staffPages) verify(ctx context.Context, a hold.Actor, event uuid.UUID) views.Verification {
	v := views.Verification{EventID: event.String(), At: time.Now()}
	before, err := s.deps.Monitor.Occupancy(ctx, a, event)
	if err != nil {
		v.Err = s.internalText(ctx, "verify occupancy", err)
		return v
	}
	start := time.Now()
	db, err := s.deps.Monitor.RecomputeOccupancy(ctx, a, event)
	v.Took = time.Since(start)
	if err != nil {
		v.Err = s.internalText(ctx, "recompute occupancy", err)
		return v
	}
	after, err := s.deps.Monitor.Occupancy(ctx, a, event)
	if err != nil {
		v.Err = s.internalText(ctx, "verify occupancy", err)
		return v
	}
	v.OK = occupancyDiff(db, before) == "" || occupancyDiff(db, after) == ""
	v.Live, v.DB = countsVM(after.Counts), countsVM(db.Counts)
	if !v.OK {
		v.Where = occupancyDiff(db, after)
	}
	if !v.OK {
		s.log.WarnContext(ctx, "live occupancy differs from postgres", "org", a.Org, "event", event,
			"live", after.Counts, "postgres", db.Counts)
	}
	return v
}

// occupancyDiff names the first part of an event's occupancy where x and
// y disagree (the totals, a section, a price category); "" when they
// agree everywhere.
func occupancyDiff(x, y hold.Occupancy) string {
	if x.Counts != y.Counts {
		return "the totals"
	}
	for i := range max(len(x.Sections), len(y.Sections)) {
		if i >= len(x.Sections) || i >= len(y.Sections) || x.Sections[i].ID != y.Sections[i].ID || x.Sections[i].Counts != y.Sections[i].Counts {
			return "section " + cmp.Or(sectionLabel(x.Sections, i), sectionLabel(y.Sections, i))
		}
	}
	for i := range max(len(x.Categories), len(y.Categories)) {
		if i >= len(x.Categories) || i >= len(y.Categories) || x.Categories[i].Key != y.Categories[i].Key || x.Categories[i].Counts != y.Categories[i].Counts {
			return "category " + cmp.Or(categoryName(x.Categories, i), categoryName(y.Categories, i))
		}
	}
	return ""
}

func sectionLabel(ss []hold.SectionOccupancy, i int) string {
	if i < len(ss) {
		return ss[i].Label
	}
	return ""
}

func categoryName(cs []hold.CategoryOccupancy, i int) string {
	switch {
	case i >= len(cs):
		return ""
	case cs[i].Key == "":
		return "(none)"
	}
	return cs[i].Name
}

// forecast reads when the event's active holds end.
func (s *staffPages) forecast(ctx context.Context, org, event uuid.UUID, now time.Time) (views.Forecast, error) {
	ex, err := s.deps.Store.Audit.HoldExpiries(ctx, org, event)
	if err != nil {
		return views.Forecast{}, err
	}
	f := views.Forecast{Now: now, Window: forecastWindow, Expiries: make([]views.Expiry, len(ex))}
	for i, e := range ex {
		f.Expiries[i] = views.Expiry{At: e.At, N: e.N}
	}
	return f, nil
}

// chartPoints is the recorded snapshots followed by the live point.
func chartPoints(snaps []store.Snapshot, live store.Counts, now time.Time) []views.ChartPoint {
	out := make([]views.ChartPoint, 0, len(snaps)+1)
	for _, sn := range snaps {
		out = append(out, views.ChartPoint{At: sn.At, Counts: countsVM(sn.Counts)})
	}
	return append(out, views.ChartPoint{At: now, Counts: countsVM(live)})
}

// feedKinds maps audit actions to the feed's words (the delta kinds).
var feedKinds = map[string]string{
	store.ActionHoldCreated: hold.KindHeld, store.ActionHoldReleased: hold.KindReleased,
	store.ActionHoldExpired: hold.KindExpired, store.ActionHoldExtended: hold.KindExtended,
	store.ActionSeatSold: hold.KindSold, store.ActionSeatBlocked: hold.KindBlocked,
	store.ActionSeatUnblocked: hold.KindUnblocked, store.ActionBookingCancelled: hold.KindCancelled,
}

// recentFeed fills the feed on page load from the audit log; live frames
// add to it from then on.
func (s *staffPages) recentFeed(ctx context.Context, a hold.Actor, event uuid.UUID) ([]views.FeedEntry, error) {
	es, err := s.deps.Store.Audit.Log(ctx, a.Org, event, store.AuditFilter{Limit: 30})
	if err != nil {
		return nil, err
	}
	out := make([]views.FeedEntry, 0, len(es))
	for _, e := range es {
		if k, ok := feedKinds[e.Action]; ok && e.Seat != "" {
			out = append(out, views.FeedEntry{Kind: k, Seat: e.Seat, At: e.At})
		}
	}
	return out, nil
}

func (s *staffPages) occupancyFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	occ, err := s.deps.Monitor.PaidOccupancy(r.Context(), a, ev.ID)
	if err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.OccupancyPanel(occupancyVM(ev.ID, occ), false))
	return nil
}

func (s *staffPages) verifyFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.VerifyLine(s.verify(r.Context(), a, ev.ID)))
	return nil
}

func (s *staffPages) feedFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	feed, err := s.recentFeed(r.Context(), a, ev.ID)
	if err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.Feed(ev.ID.String(), feed))
	return nil
}

// dashboard is the dashboard's frame: the panels that changed, replaced,
// and the batch's changes at the top of the feed.
func (sr *staffPages) dashboard(ctx context.Context, a hold.Actor, b live.StaffBatch) ([]templ.Component, error) {
	s := sr
	now := time.Now()
	occ, err := s.deps.Monitor.PaidOccupancy(ctx, a, b.Event)
	if err != nil {
		return nil, err
	}
	fc, err := s.forecast(ctx, a.Org, b.Event, now)
	if err != nil {
		return nil, err
	}
	snaps, err := sr.snapshots(ctx, a, b.Event, now)
	if err != nil {
		return nil, err
	}
	feed := make([]views.FeedEntry, 0, len(b.Changes))
	for i := len(b.Changes) - 1; i >= 0; i-- {
		d := b.Changes[i]
		if d.Kind == hold.KindSync {
			continue
		}
		feed = append(feed, views.FeedEntry{Kind: d.Kind, Seat: sr.label(d), At: d.At})
	}
	comps := []templ.Component{
		views.ModeBanner(s.mode(), true),
		views.OccupancyPanel(occupancyVM(b.Event, occ), true),
		views.ForecastPanel(fc, true),
		views.ChartFigure(views.NewChart(chartPoints(snaps, occ.Counts, now)), true),
	}
	if reg, ok := sr.liveRegistry(ctx, a, b.Event, now); ok {
		comps = append(comps, views.RegistryPanel(reg, true))
	}
	if len(feed) > 0 {
		comps = append(comps, views.FeedOOB(feed))
	}
	return comps, nil
}

func (sr *staffPages) label(d hold.Delta) string {
	if st, ok := sr.deps.Events.SeatLayout(d.Org, d.Event, d.Seat); ok {
		return st.Label()
	}
	return d.Seat.String()
}

// chartCache keeps an event's recorded snapshots between frames; the core
// adds one every SnapshotInterval, so they are read again after a third
// of that.
type chartCache struct {
	read  time.Time
	snaps []store.Snapshot
}

// snapshots returns the event's recorded occupancy for the chart, read
// from Postgres at most every third of the snapshot interval.
func (sr *staffPages) snapshots(ctx context.Context, a hold.Actor, event uuid.UUID, now time.Time) ([]store.Snapshot, error) {
	key := [2]uuid.UUID{a.Org, event}
	every := max(sr.deps.Cfg.SnapshotInterval/3, time.Second)
	sr.mu.Lock()
	c, ok := sr.charts[key]
	sr.mu.Unlock()
	if ok && now.Sub(c.read) < every {
		return c.snaps, nil
	}
	snaps, err := sr.deps.Monitor.Snapshots(ctx, a, event, now.Add(-chartSpan))
	if err != nil {
		return nil, err
	}
	sr.mu.Lock()
	sr.charts[key] = &chartCache{read: now, snaps: snaps}
	sr.mu.Unlock()
	return snaps, nil
}

package staff

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/api"
	"seatd/web/live"
)

// The organizer's dashboard: occupancy with its check against Postgres,
// the expiry forecast, the occupancy chart and the activity feed, the
// waitlist and registry panels, and the dashboard's live frame.

const (
	// forecastWindow is the dashboard's "expire in the next ..." window.
	forecastWindow = 2 * time.Minute
	// chartSpan is how far back the occupancy chart reaches.
	chartSpan = 2 * time.Hour
)

// MonitorCore is what the dashboard asks of the hold core's monitor;
// *hold.Monitor satisfies it.
type MonitorCore interface {
	Occupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
	PaidOccupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
	RecomputeOccupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
	Snapshots(ctx context.Context, a hold.Actor, event uuid.UUID, since time.Time) ([]store.Snapshot, error)
}

// ActivityReads reads when an event's holds end and its audit log;
// *store.Audit satisfies it.
type ActivityReads interface {
	HoldExpiries(ctx context.Context, org, event uuid.UUID) ([]store.ExpiryCount, error)
	Log(ctx context.Context, org, event uuid.UUID, f store.AuditFilter) ([]store.AuditEntry, error)
}

// Line reads the head of an event's waitlist; *hold.Waitlist satisfies
// it.
type Line interface {
	Line(ctx context.Context, a hold.Actor, event uuid.UUID, limit int) (int, []store.WaitlistEntry, error)
}

// WaitlistReads reads the head of an event's waitlist as the live hub's
// renderer does (no actor); *store.Waitlist satisfies it.
type WaitlistReads interface {
	OfEvent(ctx context.Context, org, event uuid.UUID, limit int) (int, []store.WaitlistEntry, error)
}

// Layout finds a seat in the hold core's cache; *hold.Events satisfies
// it.
type Layout interface {
	SeatLayout(org, event, seat uuid.UUID) (hold.SeatView, bool)
}

// Dashboard is an event's dashboard for its organizers, its panels, and
// its live frame. It keeps, per event, the recorded snapshots between
// frames and the last live registry check.
type Dashboard struct {
	*frame
	monitor          MonitorCore
	audit            ActivityReads
	checks           api.RegistryChecks
	waitlist         Line
	seats            Layout
	pays             PaymentReports
	door             DoorFigures
	snapshotInterval time.Duration

	mu       sync.Mutex
	charts   map[[2]uuid.UUID]*chartCache
	registry map[[2]uuid.UUID]*registryCheck
}

// Page is an event's dashboard.
func (p *Dashboard) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	occ, err := p.monitor.PaidOccupancy(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	d := views.Dashboard{EventID: ev.ID.String(), EventName: ev.Name, Mode: p.mode(),
		Occupancy: occupancyVM(ev.ID, occ), Verify: p.verify(ctx, a, ev.ID), Registry: p.registryVM(ctx, a, ev.ID, "")}
	if d.Forecast, err = p.forecast(ctx, a.Org, ev.ID, now); err != nil {
		return err
	}
	snaps, err := p.monitor.Snapshots(ctx, a, ev.ID, now.Add(-chartSpan))
	if err != nil {
		return err
	}
	d.Chart = views.NewChart(chartPoints(snaps, occ.Counts, now))
	if d.Feed, err = p.recentFeed(ctx, a, ev.ID); err != nil {
		return err
	}
	if d.Revenue, err = revenue(ctx, p.pays, a, ev.ID); err != nil {
		return err
	}
	if d.Door, err = p.doorFigures(ctx, a, ev.ID); err != nil {
		return err
	}
	p.page(w, r, ev, views.DashboardPage(p.render.Meta(r, ev.Name+" · dashboard"), d))
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
		sold := money.Format(c.RevenueSold, c.Currency)
		for _, cur := range slices.Sorted(maps.Keys(c.RevenueSoldOther)) {
			sold += " + " + money.Format(c.RevenueSoldOther[cur], cur)
		}
		out.Categories = append(out.Categories, views.CategoryCounts{Name: name, Price: money.Format(c.PriceMinor, c.Currency),
			RevenueSold: sold, RevenueHeld: money.Format(c.RevenueHeld, c.Currency), Counts: countsVM(c.Counts)})
	}
	return out
}

// verify checks the live counters against a recount in Postgres. The
// counters are read before and after the recount: a change committed
// meanwhile makes one of them differ, but not both.
func (p *Dashboard) verify(ctx context.Context, a hold.Actor, event uuid.UUID) views.Verification {
	v := views.Verification{EventID: event.String(), At: time.Now()}
	before, err := p.monitor.Occupancy(ctx, a, event)
	if err != nil {
		v.Err = p.internalText(ctx, "verify occupancy", err)
		return v
	}
	start := time.Now()
	db, err := p.monitor.RecomputeOccupancy(ctx, a, event)
	v.Took = time.Since(start)
	if err != nil {
		v.Err = p.internalText(ctx, "recompute occupancy", err)
		return v
	}
	after, err := p.monitor.Occupancy(ctx, a, event)
	if err != nil {
		v.Err = p.internalText(ctx, "verify occupancy", err)
		return v
	}
	v.OK = OccupancyDiff(db, before) == "" || OccupancyDiff(db, after) == ""
	v.Live, v.DB = countsVM(after.Counts), countsVM(db.Counts)
	if !v.OK {
		v.Where = OccupancyDiff(db, after)
	}
	if !v.OK {
		p.log.WarnContext(ctx, "live occupancy differs from postgres", "org", a.Org, "event", event,
			"live", after.Counts, "postgres", db.Counts)
	}
	return v
}

// OccupancyDiff names the first part of an event's occupancy where x and
// y disagree (the totals, a section, a price category); "" when they
// agree everywhere.
func OccupancyDiff(x, y hold.Occupancy) string {
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
func (p *Dashboard) forecast(ctx context.Context, org, event uuid.UUID, now time.Time) (views.Forecast, error) {
	ex, err := p.audit.HoldExpiries(ctx, org, event)
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
func (p *Dashboard) recentFeed(ctx context.Context, a hold.Actor, event uuid.UUID) ([]views.FeedEntry, error) {
	es, err := p.audit.Log(ctx, a.Org, event, store.AuditFilter{Limit: 30})
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

// Occupancy is the occupancy panel alone.
func (p *Dashboard) Occupancy(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	occ, err := p.monitor.PaidOccupancy(r.Context(), a, ev.ID)
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.OccupancyPanel(occupancyVM(ev.ID, occ), false))
	return nil
}

// Verify checks the live counts against Postgres and shows the outcome.
func (p *Dashboard) Verify(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.VerifyLine(p.verify(r.Context(), a, ev.ID)))
	return nil
}

// Feed is the activity feed alone, from the audit log.
func (p *Dashboard) Feed(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	feed, err := p.recentFeed(r.Context(), a, ev.ID)
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.Feed(ev.ID.String(), feed))
	return nil
}

// liveFrame is the dashboard's live frame: the panels that changed,
// replaced, and the batch's changes at the top of the feed.
func (p *Dashboard) liveFrame(ctx context.Context, a hold.Actor, b live.StaffBatch) ([]templ.Component, error) {
	now := time.Now()
	occ, err := p.monitor.PaidOccupancy(ctx, a, b.Event)
	if err != nil {
		return nil, err
	}
	fc, err := p.forecast(ctx, a.Org, b.Event, now)
	if err != nil {
		return nil, err
	}
	snaps, err := p.snapshots(ctx, a, b.Event, now)
	if err != nil {
		return nil, err
	}
	feed := make([]views.FeedEntry, 0, len(b.Changes))
	for i := len(b.Changes) - 1; i >= 0; i-- {
		d := b.Changes[i]
		if d.Kind == hold.KindSync {
			continue
		}
		feed = append(feed, views.FeedEntry{Kind: d.Kind, Seat: p.label(d), At: d.At})
	}
	comps := []templ.Component{
		views.ModeBanner(p.mode(), true),
		views.OccupancyPanel(occupancyVM(b.Event, occ), true),
		views.ForecastPanel(fc, true),
		views.ChartFigure(views.NewChart(chartPoints(snaps, occ.Counts, now)), true),
	}
	if reg, ok := p.liveRegistry(ctx, a, b.Event, now); ok {
		comps = append(comps, views.RegistryPanel(reg, true))
	}
	if len(feed) > 0 {
		comps = append(comps, views.FeedOOB(feed))
	}
	return comps, nil
}

func (p *Dashboard) label(d hold.Delta) string {
	if st, ok := p.seats.SeatLayout(d.Org, d.Event, d.Seat); ok {
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
func (p *Dashboard) snapshots(ctx context.Context, a hold.Actor, event uuid.UUID, now time.Time) ([]store.Snapshot, error) {
	key := [2]uuid.UUID{a.Org, event}
	every := max(p.snapshotInterval/3, time.Second)
	p.mu.Lock()
	c, ok := p.charts[key]
	p.mu.Unlock()
	if ok && now.Sub(c.read) < every {
		return c.snaps, nil
	}
	snaps, err := p.monitor.Snapshots(ctx, a, event, now.Add(-chartSpan))
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.charts[key] = &chartCache{read: now, snaps: snaps}
	p.mu.Unlock()
	return snaps, nil
}

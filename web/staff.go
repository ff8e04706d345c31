package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/live"
)

// Staff pages: the organizer's dashboard, the box office and the audit
// log, with the fragments their panels reload from, their live sockets,
// and the staff frames the hub pushes to those sockets.

const (
	// forecastWindow is the dashboard's "expire in the next ..." window.
	forecastWindow = 2 * time.Minute
	// chartSpan is how far back the occupancy chart reaches.
	chartSpan = 2 * time.Hour
	// holdPageRows is the box office table's page size.
	holdPageRows = 100
	// auditPageSize is the number of audit entries per page.
	auditPageSize = 50
	// releaseMax caps the holds one release form may name.
	releaseMax = 500
	// reasonMax is the longest release or block reason, in characters.
	reasonMax = 500
)

// staffRoutes registers the organizer dashboard, box office and audit
// pages, and turns on the hub's staff streams.
func (s *Server) staffRoutes() {
	p := newStaffPages(s)
	s.hub.EnableStaff(live.StaffOptions{Renderer: p, Notice: p.releaseNotice})

	// Organizer.
	s.mux.HandleFunc("GET /admin/events/{event}", s.page(organizer, p.dashboardPage))
	s.mux.HandleFunc("GET /admin/events/{event}/occupancy", s.page(organizer, p.occupancyFragment))
	s.mux.HandleFunc("POST /admin/events/{event}/occupancy/verify", s.page(organizer, p.verifyFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/feed", s.page(organizer, p.feedFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/registry", s.page(organizer, p.registryFragment))
	s.mux.HandleFunc("POST /admin/events/{event}/registry/reconcile", s.page(organizer, p.reconcileFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/audit", s.page(organizer, p.auditPage))

	// Box office; organizers may use it too.
	s.mux.HandleFunc("GET /box-office/events/{event}", s.page(staff, p.boxOfficePage))
	s.mux.HandleFunc("POST /box-office/events/{event}/lookup", s.page(staff, p.lookupCustomer))
	s.mux.HandleFunc("GET /box-office/events/{event}/holds", s.page(staff, p.holdsFragment))
	s.mux.HandleFunc("GET /box-office/events/{event}/map", s.page(staff, p.boxMapFragment))
	s.mux.HandleFunc("POST /box-office/events/{event}/release", s.page(staff, p.releaseHolds))
	s.mux.HandleFunc("POST /box-office/events/{event}/seats/{seat}/block", s.page(staff, p.boxBlock))
	s.mux.HandleFunc("POST /box-office/events/{event}/seats/{seat}/unblock", s.page(staff, p.boxUnblock))

	// Their live sockets.
	s.mux.HandleFunc("GET /live/events/{event}/dashboard", p.authed(organizer, p.liveSocket(live.StreamDashboard)))
	s.mux.HandleFunc("GET /live/events/{event}/box-office", p.authed(staff, p.liveSocket(live.StreamBoxOffice)))
}

// staffEvent resolves the {event} of a staff page within the actor's
// organization (404 otherwise).
func (s *staffPages) staffEvent(r *http.Request, a hold.Actor) (store.Event, error) {
	id, err := pathID(r, "event")
	if err != nil {
		return store.Event{}, err
	}
	return s.deps.Store.Event(r.Context(), a.Org, id)
}

// renderStaff renders a staff page or fragment with the event known to the
// navigation bar.
func (s *staffPages) renderStaff(w http.ResponseWriter, r *http.Request, ev store.Event, c templ.Component) {
	ctx := views.WithEventNav(r.Context(), views.EventNav{ID: ev.ID.String()})
	s.render(w, r.WithContext(ctx), http.StatusOK, c)
}

// internalText logs an internal error and returns what a panel shows
// instead; a domain error's message is shown as is.
func (s *staffPages) internalText(ctx context.Context, what string, err error) string {
	if e, ok := apperr.As(err); ok && e.Code != apperr.Internal {
		return e.Message
	}
	s.log.ErrorContext(ctx, what, "err", err)
	return internalMessage
}

// --- dashboard ---

func (s *staffPages) dashboardPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	occ, err := s.deps.Core.Occupancy(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	d := views.Dashboard{EventID: ev.ID.String(), EventName: ev.Name, Mode: s.mode(),
		Occupancy: occupancyVM(ev.ID, occ), Verify: s.verify(ctx, a, ev.ID), Registry: s.registryVM(ctx, a, ev.ID, "")}
	if d.Forecast, err = s.forecast(ctx, a.Org, ev.ID, now); err != nil {
		return err
	}
	snaps, err := s.deps.Core.Snapshots(ctx, a, ev.ID, now.Add(-chartSpan))
	if err != nil {
		return err
	}
	d.Chart = views.NewChart(chartPoints(snaps, occ.Counts, now))
	if d.Feed, err = s.recentFeed(ctx, a, ev.ID); err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.DashboardPage(s.pageMeta(r, ev.Name+" · dashboard"), d))
	return nil
}

func (s *staffPages) mode() views.Mode {
	return views.Mode{FastPath: s.deps.Core.FastPath(), Breaker: s.deps.Core.BreakerState()}
}

func countsVM(c store.Counts) views.Counts {
	return views.Counts{Available: c.Available, Held: c.Held, Sold: c.Sold, Blocked: c.Blocked}
}

func occupancyVM(event uuid.UUID, o hold.Occupancy) views.Occupancy {
	out := views.Occupancy{EventID: event.String(), Counts: countsVM(o.Counts), Sections: make([]views.SectionCounts, len(o.Sections))}
	for i, sec := range o.Sections {
		out.Sections[i] = views.SectionCounts{Label: sec.Label, Name: sec.Name, Counts: countsVM(sec.Counts)}
	}
	return out
}

// verify checks the live counters against a recount in Postgres. The
// counters are read before and after the recount: a change committed
// meanwhile makes one of them differ, but not both.
func (s *staffPages) verify(ctx context.Context, a hold.Actor, event uuid.UUID) views.Verification {
	v := views.Verification{EventID: event.String(), At: time.Now()}
	before, err := s.deps.Core.Occupancy(ctx, a, event)
	if err != nil {
		v.Err = s.internalText(ctx, "verify occupancy", err)
		return v
	}
	start := time.Now()
	db, err := s.deps.Core.RecomputeOccupancy(ctx, a, event)
	v.Took = time.Since(start)
	if err != nil {
		v.Err = s.internalText(ctx, "recompute occupancy", err)
		return v
	}
	after, err := s.deps.Core.Occupancy(ctx, a, event)
	if err != nil {
		v.Err = s.internalText(ctx, "verify occupancy", err)
		return v
	}
	v.OK = sameOccupancy(db, before) || sameOccupancy(db, after)
	v.Live, v.DB = countsVM(after.Counts), countsVM(db.Counts)
	if !v.OK {
		s.log.WarnContext(ctx, "live occupancy differs from postgres", "org", a.Org, "event", event,
			"live", after.Counts, "postgres", db.Counts)
	}
	return v
}

func sameOccupancy(x, y hold.Occupancy) bool {
	return x.Counts == y.Counts && slices.EqualFunc(x.Sections, y.Sections, func(p, q hold.SectionOccupancy) bool {
		return p.ID == q.ID && p.Counts == q.Counts
	})
}

// forecast reads when the event's active holds end.
func (s *staffPages) forecast(ctx context.Context, org, event uuid.UUID, now time.Time) (views.Forecast, error) {
	ex, err := s.deps.Store.HoldExpiries(ctx, org, event)
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
	store.ActionSeatUnblocked: hold.KindUnblocked,
}

// recentFeed fills the feed on page load from the audit log; live frames
// add to it from then on.
func (s *staffPages) recentFeed(ctx context.Context, a hold.Actor, event uuid.UUID) ([]views.FeedEntry, error) {
	es, err := s.deps.Store.AuditLog(ctx, a.Org, event, store.AuditFilter{Limit: 30})
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
	occ, err := s.deps.Core.Occupancy(r.Context(), a, ev.ID)
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

// registryVM reads the tiers' agreement; a failure shows in the panel.
func (s *staffPages) registryVM(ctx context.Context, a hold.Actor, event uuid.UUID, msg string) views.Registry {
	out := views.Registry{EventID: event.String(), Message: msg, CheckedAt: time.Now()}
	reg, at, err := s.flights.status(ctx, a, event)
	if err != nil {
		out.Err = s.internalText(ctx, "registry status", err)
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

func (s *staffPages) registryFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.RegistryPanel(s.registryVM(r.Context(), a, ev.ID, ""), false))
	return nil
}

// reconcileFragment rebuilds Redis and the hot caches from Postgres and
// shows the outcome in the panel (a failure too: htmx would not swap an
// error status, and the organizer must see it). A second click within the
// cooldown shows the first one's outcome and time (see registryFlights).
func (s *staffPages) reconcileFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	out := views.Registry{EventID: ev.ID.String(), CheckedAt: time.Now()}
	reg, at, err := s.flights.reconciled(ctx, a, ev.ID)
	if err != nil {
		out = s.registryVM(ctx, a, ev.ID, "Reconcile failed: "+s.internalText(ctx, "reconcile", err))
	} else {
		out.CheckedAt = at
		out = registryView(out, reg)
		out.Message = fmt.Sprintf("Reconciled at %s: Redis and the hot caches were rebuilt from Postgres (%d active %s).",
			out.CheckedAt.UTC().Format("15:04:05 MST"), reg.Postgres, plural(reg.Postgres, "hold", "holds"))
	}
	s.renderStaff(w, r, ev, views.RegistryPanel(out, false))
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// --- box office ---

// holdFilter reads the box office's filter from query or form values.
func holdFilter(v url.Values) views.HoldFilter {
	f := views.HoldFilter{Section: strings.TrimSpace(v.Get("section")), Holder: strings.TrimSpace(v.Get("holder"))}
	if len(f.Section) > 20 {
		f.Section = f.Section[:20]
	}
	if len(f.Holder) > 254 {
		f.Holder = f.Holder[:254]
	}
	if !utf8.ValidString(f.Section) || !utf8.ValidString(f.Holder) {
		return views.HoldFilter{}
	}
	if after := v.Get("after"); len(after) <= 200 {
		f.After = after // checked when decoded
	}
	return f
}

func (s *staffPages) boxOfficePage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.boxOfficeWith(w, r, a, r.URL.Query(), "")
}

// boxOfficeWith renders the box office with the filters in q and, for an
// email, that customer's lookup.
func (s *staffPages) boxOfficeWith(w http.ResponseWriter, r *http.Request, a hold.Actor, q url.Values, email string) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	b := views.BoxOffice{EventID: ev.ID.String(), EventName: ev.Name, Mode: s.mode(), Organizer: a.Role == hold.RoleOrganizer}
	occ, err := s.deps.Core.Occupancy(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	b.Summary = countsVM(occ.Counts)
	if b.Holds, err = s.holdTable(ctx, a, ev.ID, holdFilter(q)); err != nil {
		return err
	}
	if b.Map, err = s.boxMap(ctx, a, ev.ID, q.Get("map")); err != nil {
		return err
	}
	if email != "" {
		if b.Lookup, err = s.lookup(ctx, a, ev.ID, email); err != nil {
			return err
		}
	}
	s.renderStaff(w, r, ev, views.BoxOfficePage(s.pageMeta(r, ev.Name+" · box office"), b))
	return nil
}

func (s *staffPages) holdTable(ctx context.Context, a hold.Actor, event uuid.UUID, f views.HoldFilter) (views.HoldTable, error) {
	t := views.HoldTable{EventID: event.String(), Filter: f}
	secs, err := s.deps.Store.Sections(ctx, a.Org, event)
	if err != nil {
		return t, err
	}
	for _, sec := range secs {
		t.Sections = append(t.Sections, sec.Label)
	}
	after, err := decodeHoldCursor(f.After)
	if err != nil {
		// A cursor not of ours (edited by hand): the first page.
		after, t.Filter.After = store.HoldCursor{}, ""
	}
	p, err := s.deps.Store.ActiveHoldsPage(ctx, a.Org, event, store.HoldFilter{Section: f.Section, Holder: f.Holder},
		after, holdPageRows, true)
	if err != nil {
		return t, err
	}
	t.Rows, t.Total = holdRows(p.Holds), p.Total
	if !p.Next.IsZero() {
		t.Next = encodeHoldCursor(p.Next)
	}
	return t, nil
}

func holdRows(hs []store.StaffHold) []views.HoldRow {
	out := make([]views.HoldRow, len(hs))
	for i, h := range hs {
		out[i] = views.HoldRow{HoldID: h.ID.String(), SeatID: h.SeatID.String(), Seat: h.Label(), Section: h.Section,
			Email: h.Email, Since: h.CreatedAt, Until: h.HeldUntil, Extended: h.Extensions > 0}
	}
	return out
}

func (s *staffPages) holdsFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	t, err := s.holdTable(r.Context(), a, ev.ID, holdFilter(r.URL.Query()))
	if err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.HoldsPanel(t))
	return nil
}

// boxMap lays out one section of the event (the first if section names
// none) with its top-left seat at the grid's second column, first row:
// the first column holds the row letters.
func (s *staffPages) boxMap(ctx context.Context, a hold.Actor, event uuid.UUID, section string) (views.BoxMap, error) {
	m := views.BoxMap{EventID: event.String()}
	secs, seats, err := s.deps.Core.SeatViews(ctx, a, event)
	if err != nil {
		return m, err
	}
	for _, sec := range secs {
		m.Sections = append(m.Sections, sec.Label)
	}
	if len(secs) == 0 {
		return m, nil
	}
	m.Section = secs[0].Label
	if slices.Contains(m.Sections, section) {
		m.Section = section
	}
	origin := origins(seats)[m.Section]
	rows := map[string]bool{}
	for _, st := range seats {
		if st.Section != m.Section {
			continue
		}
		vm := boxSeatVM(event, st, origin)
		m.Seats = append(m.Seats, vm)
		if !rows[st.Row] {
			rows[st.Row] = true
			m.Rows = append(m.Rows, views.Label{Text: st.Row, Col: 1, GridRow: vm.GridRow})
		}
	}
	return m, nil
}

// origin is a section's top-left corner on the venue grid.
type origin struct{ x, y int }

func origins(seats []hold.SeatView) map[string]origin {
	out := map[string]origin{}
	for _, st := range seats {
		o, ok := out[st.Section]
		if !ok {
			o = origin{st.X, st.Y}
		}
		out[st.Section] = origin{min(o.x, st.X), min(o.y, st.Y)}
	}
	return out
}

func boxSeatVM(event uuid.UUID, st hold.SeatView, o origin) views.Seat {
	return views.Seat{ID: st.ID.String(), EventID: event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Col: st.X - o.x + 2, GridRow: st.Y - o.y + 1, Status: string(st.Status), Version: st.Version}
}

func (s *staffPages) boxMapFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	m, err := s.boxMap(r.Context(), a, ev.ID, r.URL.Query().Get("map"))
	if err != nil {
		return err
	}
	s.renderStaff(w, r, ev, views.BoxMapPanel(m))
	return nil
}

// lookup finds a customer by email with their holds and bookings.
func (s *staffPages) lookup(ctx context.Context, a hold.Actor, event uuid.UUID, email string) (*views.Lookup, error) {
	email = strings.ToLower(email)
	if len(email) > 254 || !utf8.ValidString(email) {
		return &views.Lookup{Email: "(invalid)"}, nil
	}
	l := &views.Lookup{Email: email}
	act, err := s.deps.Store.BuyerActivity(ctx, a.Org, event, email)
	if apperr.CodeOf(err) == apperr.NotFound {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	l.Found = true
	l.Holds = holdRows(act.Holds)
	for _, b := range act.Bookings {
		l.Bookings = append(l.Bookings, views.LookupBooking{ID: b.ID.String(), CreatedAt: b.CreatedAt, Seats: b.Seats})
	}
	return l, nil
}

// lookupCustomer answers the lookup form. The email comes in the body,
// never in the URL, which logs, browser history and Referer headers keep:
// htmx gets the panel, a plain form post the whole page.
func (s *staffPages) lookupCustomer(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	v, err := form(w, r)
	if err != nil {
		return err
	}
	email := strings.TrimSpace(v.Get("lookup"))
	if r.Header.Get("HX-Request") != "true" {
		return s.boxOfficeWith(w, r, a, v, email)
	}
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	var l *views.Lookup
	if email != "" {
		if l, err = s.lookup(r.Context(), a, ev.ID, email); err != nil {
			return err
		}
	}
	s.renderStaff(w, r, ev, views.LookupPanel(ev.ID.String(), holdFilter(v), l))
	return nil
}

// releaseHolds releases the selected holds with a reason (the core writes
// it to the audit log) and goes back to the box office. Every hold must be
// one of this event's holds in the session's organization: otherwise the
// answer is 404, as for a hold that does not exist, and nothing is
// released.
func (s *staffPages) releaseHolds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	v, err := form(w, r)
	if err != nil {
		return err
	}
	back := "/box-office/events/" + ev.ID.String() + holdFilter(v).Query()
	if len(v["hold_id"]) > releaseMax {
		return apperr.E(apperr.Invalid, "release at most %d holds at once", releaseMax)
	}
	ids, err := bodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	slices.SortFunc(ids, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	ids = slices.Compact(ids)
	reason := strings.TrimSpace(v.Get("reason"))
	ctx := r.Context()
	switch {
	case len(ids) == 0:
		return s.backWith(w, r, back, "Select the holds to release first.")
	case reason == "":
		return s.backWith(w, r, back, "Give a reason for releasing; it is kept in the audit log.")
	case utf8.RuneCountInString(reason) > reasonMax:
		return s.backWith(w, r, back, fmt.Sprintf("The reason is too long (at most %d characters).", reasonMax))
	}
	for _, id := range ids {
		h, err := s.deps.Store.HoldByID(ctx, a.Org, id)
		if err != nil {
			return err
		}
		if h.EventID != ev.ID {
			return apperr.E(apperr.NotFound, "hold not found")
		}
	}
	var released []string
	ended := 0
	for _, id := range ids {
		h, err := s.deps.Core.Release(ctx, a, id, reason)
		switch {
		case err == nil:
			released = append(released, s.deps.Core.SeatLabel(ctx, a, ev.ID, h.SeatID))
		case apperr.CodeOf(err) == apperr.NotFound:
			ended++ // ended meanwhile: expired, bought or released by someone else
		default:
			return err
		}
	}
	var msg []string
	if len(released) > 0 {
		slices.Sort(released)
		msg = append(msg, fmt.Sprintf("Released %d %s (%s).", len(released), plural(len(released), "hold", "holds"),
			strings.Join(released, ", ")))
	}
	if ended > 0 {
		msg = append(msg, fmt.Sprintf("%d had already ended.", ended))
	}
	return s.backWith(w, r, back, strings.Join(msg, " "))
}

// backWith redirects to a page of this site that shows msg as its flash.
// to is always built here from a path and escaped query values.
func (s *staffPages) backWith(w http.ResponseWriter, r *http.Request, to, msg string) error {
	s.sessions.Put(r.Context(), sessFlash, msg)
	http.Redirect(w, r, to, http.StatusSeeOther) // #nosec G710 -- a local path ("/box-office/events/<uuid>?..."), not user input
	return nil
}

func (s *staffPages) boxBlock(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.boxSetBlocked(w, r, a, true)
}

func (s *staffPages) boxUnblock(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.boxSetBlocked(w, r, a, false)
}

// boxSetBlocked answers a click on the box office map with a message and
// the seat's state; a seat that is held or sold is not blockable, and
// the message says so.
func (s *staffPages) boxSetBlocked(w http.ResponseWriter, r *http.Request, a hold.Actor, blocked bool) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	seat, err := pathID(r, "seat")
	if err != nil {
		return err
	}
	v, err := form(w, r)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(v.Get("reason"))
	if utf8.RuneCountInString(reason) > reasonMax {
		return apperr.E(apperr.Invalid, "the reason is too long (at most %d characters)", reasonMax)
	}
	ctx := r.Context()
	_, err = s.deps.Core.SetBlocked(ctx, a, ev.ID, seat, blocked, reason)
	if err != nil && apperr.CodeOf(err) != apperr.Conflict {
		return err
	}
	label := s.deps.Core.SeatLabel(ctx, a, ev.ID, seat)
	st, ok := s.deps.Core.SeatLayout(a.Org, ev.ID, seat)
	msg, kind := "Seat "+label+" blocked.", "success"
	switch {
	case err == nil && !blocked:
		msg = "Seat " + label + " unblocked; it is for sale again."
	case err != nil && st.Status == store.Held:
		msg, kind = "Seat "+label+" is held by a buyer and cannot be blocked; release the hold first.", "error"
	case err != nil && st.Status == store.Sold:
		msg, kind = "Seat "+label+" is sold and cannot be blocked.", "error"
	case err != nil:
		msg, kind = "Seat "+label+" is "+string(st.Status)+" now; nothing changed.", "error"
	}
	comps := []templ.Component{views.MapMessage(msg, kind)}
	if ok {
		orig, err := s.origins(ctx, a, ev.ID)
		if err != nil {
			return err
		}
		comps = append(comps, views.BoxSeat(boxSeatVM(ev.ID, st, orig[st.Section]), true))
	}
	s.renderStaff(w, r, ev, templ.Join(comps...))
	return nil
}

// --- audit log ---

func (s *staffPages) auditPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	l := views.AuditLog{EventID: ev.ID.String(), EventName: ev.Name, Actions: store.AuditActions,
		Filter: views.AuditFilter{Seat: strings.TrimSpace(q.Get("seat")), Email: strings.ToLower(strings.TrimSpace(q.Get("email"))),
			Action: q.Get("action")}}
	if len(l.Filter.Seat) > 40 || len(l.Filter.Email) > 254 || !utf8.ValidString(l.Filter.Seat+l.Filter.Email) {
		return apperr.E(apperr.Invalid, "the filter is too long")
	}
	if l.Filter.Action != "" && !slices.Contains(store.AuditActions, l.Filter.Action) {
		return apperr.E(apperr.Invalid, "unknown action %q", l.Filter.Action)
	}
	f := store.AuditFilter{Action: l.Filter.Action, Limit: auditPageSize + 1}
	if b := q.Get("before"); b != "" {
		if f.Before, err = strconv.ParseInt(b, 10, 64); err != nil || f.Before <= 0 {
			return apperr.E(apperr.Invalid, "before must be a positive entry id")
		}
	}
	l.First = f.Before == 0
	if l.Filter.Seat != "" {
		if f.Seat, err = s.deps.Store.SeatByLabel(ctx, a.Org, ev.ID, l.Filter.Seat); err != nil {
			if apperr.CodeOf(err) != apperr.NotFound {
				return err
			}
			l.Message = "This event has no seat " + l.Filter.Seat + " (seats are named section-row-number, like B-A-12)."
		}
	}
	if l.Filter.Email != "" && l.Message == "" {
		u, err := s.deps.Store.UserByEmail(ctx, a.Org, l.Filter.Email)
		if err != nil {
			if apperr.CodeOf(err) != apperr.NotFound {
				return err
			}
			l.Message = "No account with the email " + l.Filter.Email + " in this organization."
		}
		f.User = u.ID
	}
	if l.Message == "" {
		es, err := s.deps.Store.AuditLog(ctx, a.Org, ev.ID, f)
		if err != nil {
			return err
		}
		if len(es) > auditPageSize {
			es = es[:auditPageSize]
			l.Older = "/admin/events/" + ev.ID.String() + "/audit" + l.Filter.Query(strconv.FormatInt(es[len(es)-1].ID, 10))
		}
		for _, e := range es {
			l.Rows = append(l.Rows, views.AuditRow{ID: e.ID, At: e.At, Action: e.Action, Actor: e.Actor, Holder: e.Holder,
				Seat: e.Seat, Reason: e.Reason})
		}
	}
	s.renderStaff(w, r, ev, views.AuditPage(s.pageMeta(r, ev.Name+" · audit log"), l))
	return nil
}

// --- live ---

// releaseNotice is what a buyer's seat map is told when staff released
// their hold.
func (s *staffPages) releaseNotice(d hold.Delta) []byte {
	label := d.Seat.String()
	if st, ok := s.deps.Core.SeatLayout(d.Org, d.Event, d.Seat); ok {
		label = st.Label()
	}
	b, err := renderBytes(context.Background(), views.ReleaseNotice(label))
	if err != nil {
		return nil
	}
	return b
}

func renderBytes(ctx context.Context, comps ...templ.Component) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range comps {
		if err := c.Render(ctx, &b); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// staffPages serves the staff pages and renders the staff frames the hub
// sends to dashboards and box offices (once per batch of changes and
// stream, whatever the number of sockets). It keeps what both reuse.
type staffPages struct {
	*Server

	mu       sync.Mutex
	charts   map[[2]uuid.UUID]*chartCache
	layout   map[[2]uuid.UUID]map[string]origin
	registry map[[2]uuid.UUID]*registryCheck
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

// chartCache keeps an event's recorded snapshots between frames; the core
// adds one every SnapshotInterval, so they are read again after a third
// of that.
type chartCache struct {
	read  time.Time
	snaps []store.Snapshot
}

func newStaffPages(s *Server) *staffPages {
	return &staffPages{Server: s, charts: map[[2]uuid.UUID]*chartCache{}, layout: map[[2]uuid.UUID]map[string]origin{},
		registry: map[[2]uuid.UUID]*registryCheck{}}
}

var _ live.StaffRenderer = (*staffPages)(nil)

// RenderStaff implements live.StaffRenderer. The batch is of an event the
// hub checked belongs to b.Org, so the renderer acts as that
// organization's staff.
func (sr *staffPages) RenderStaff(ctx context.Context, st live.Stream, b live.StaffBatch) []byte {
	a := hold.Actor{Org: b.Org, Role: hold.RoleOrganizer}
	var comps []templ.Component
	var err error
	switch st {
	case live.StreamDashboard:
		comps, err = sr.dashboard(ctx, a, b)
	case live.StreamBoxOffice:
		comps, err = sr.boxOffice(ctx, a, b)
	}
	var out []byte
	if err == nil {
		out, err = renderBytes(ctx, comps...)
	}
	if err != nil {
		if ctx.Err() == nil {
			sr.log.Error("render staff frame", "stream", st.String(), "org", b.Org, "event", b.Event, "err", err)
		}
		return nil
	}
	return out
}

// dashboard is the dashboard's frame: the panels that changed, replaced,
// and the batch's changes at the top of the feed.
func (sr *staffPages) dashboard(ctx context.Context, a hold.Actor, b live.StaffBatch) ([]templ.Component, error) {
	s := sr
	now := time.Now()
	occ, err := s.deps.Core.Occupancy(ctx, a, b.Event)
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

// liveRegistry checks the registry for a dashboard frame at most every
// registryEvery. A disagreement is shown only when the check before (at
// most registryConfirm earlier) found one too; until then the panel keeps
// what it showed.
func (sr *staffPages) liveRegistry(ctx context.Context, a hold.Actor, event uuid.UUID, now time.Time) (views.Registry, bool) {
	key := [2]uuid.UUID{a.Org, event}
	sr.mu.Lock()
	last, ok := sr.registry[key]
	if ok && now.Sub(last.at) < registryEvery {
		sr.mu.Unlock()
		return views.Registry{}, false
	}
	prev := ok && last.inconsistent && now.Sub(last.at) <= registryConfirm
	sr.registry[key] = &registryCheck{at: now, inconsistent: last != nil && last.inconsistent}
	sr.mu.Unlock()

	reg, _, err := sr.flights.status(ctx, a, event)
	if err != nil {
		sr.log.Warn("live registry check", "org", a.Org, "event", event, "err", err)
		return views.Registry{}, false
	}
	sr.mu.Lock()
	sr.registry[key] = &registryCheck{at: now, inconsistent: !reg.Consistent}
	sr.mu.Unlock()
	if !reg.Consistent && !prev {
		return views.Registry{}, false
	}
	return registryView(views.Registry{EventID: event.String(), CheckedAt: now}, reg), true
}

// boxOffice is the box office's frame: rows removed for holds that ended
// (or changed), rows added for current holds, the changed seats of its
// map, and the counts.
func (sr *staffPages) boxOffice(ctx context.Context, a hold.Actor, b live.StaffBatch) ([]templ.Component, error) {
	s := sr
	occ, err := s.deps.Core.Occupancy(ctx, a, b.Event)
	if err != nil {
		return nil, err
	}
	orig, err := sr.origins(ctx, a, b.Event)
	if err != nil {
		return nil, err
	}
	comps := []templ.Component{views.ModeBanner(s.mode(), true), views.BoxSummary(countsVM(occ.Counts), true)}
	var held []uuid.UUID
	for _, d := range b.Seats {
		// A row can only exist if the seat was held: deleting only then
		// spares the page a swap without a target.
		if d.Prev == store.Held || d.Kind == hold.KindSync || d.Kind == hold.KindExtended {
			comps = append(comps, views.HoldRowDeleteOOB(d.Seat.String()))
		}
		if d.Status == store.Held {
			held = append(held, d.Seat)
		}
		if st, ok := s.deps.Core.SeatLayout(b.Org, b.Event, d.Seat); ok {
			// The change is the truth for this frame; the cache may be
			// newer already.
			st.Status, st.Version = d.Status, d.Version
			comps = append(comps, views.BoxSeat(boxSeatVM(b.Event, st, orig[st.Section]), true))
		}
	}
	if len(held) > 0 {
		// Postgres has the holder's email and the hold's start; a hold
		// that ended since is not found, and its own change removes it.
		hs, err := s.deps.Store.ActiveHolds(ctx, a.Org, b.Event, store.HoldFilter{Seats: held})
		if err != nil {
			return nil, err
		}
		if len(hs) > 0 {
			comps = append(comps, views.HoldRowsOOB(holdRows(hs)))
		}
	}
	return comps, nil
}

func (sr *staffPages) label(d hold.Delta) string {
	if st, ok := sr.deps.Core.SeatLayout(d.Org, d.Event, d.Seat); ok {
		return st.Label()
	}
	return d.Seat.String()
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
	snaps, err := sr.deps.Core.Snapshots(ctx, a, event, now.Add(-chartSpan))
	if err != nil {
		return nil, err
	}
	sr.mu.Lock()
	sr.charts[key] = &chartCache{read: now, snaps: snaps}
	sr.mu.Unlock()
	return snaps, nil
}

// origins returns where each section of the event starts on the grid; a
// venue's layout never changes, so it is computed once per event.
func (sr *staffPages) origins(ctx context.Context, a hold.Actor, event uuid.UUID) (map[string]origin, error) {
	key := [2]uuid.UUID{a.Org, event}
	sr.mu.Lock()
	o, ok := sr.layout[key]
	sr.mu.Unlock()
	if ok {
		return o, nil
	}
	_, seats, err := sr.deps.Core.SeatViews(ctx, a, event)
	if err != nil {
		return nil, err
	}
	o = origins(seats)
	sr.mu.Lock()
	sr.layout[key] = o
	sr.mu.Unlock()
	return o, nil
}

package staff

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/live"
	"seatd/web/query"
)

// The box office: the active holds table, the customer lookup, the seat
// map that blocks and unblocks seats, releasing holds (release.go), and
// the box office's live frame.

// Counts counts an event's seats live; *hold.Monitor satisfies it.
type Counts interface {
	Occupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
}

// BookingFinder finds bookings and lists house seats; *hold.BoxOffice
// satisfies it.
type BookingFinder interface {
	FindBookings(ctx context.Context, a hold.Actor, query string) ([]store.Booking, error)
	HouseSeats(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.HouseAllocation, error)
}

// Sections lists an event's sections; *store.Events satisfies it.
type Sections interface {
	Sections(ctx context.Context, org, event uuid.UUID) ([]store.Section, error)
}

// HoldReads reads an event's active holds with their holders, and a
// buyer's activity; *store.Audit satisfies it.
type HoldReads interface {
	ActiveHoldsPage(ctx context.Context, org, event uuid.UUID, f store.HoldFilter, after store.HoldCursor, limit int, total bool) (store.HoldPage, error)
	ActiveHolds(ctx context.Context, org, event uuid.UUID, f store.HoldFilter) ([]store.StaffHold, error)
	BuyerActivity(ctx context.Context, org, event uuid.UUID, email string) (store.BuyerActivity, error)
}

// Seats is what the box office's map reads of an event's seats from the
// hold core's cache; *hold.Events satisfies it.
type Seats interface {
	SeatViews(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Section, []hold.SeatView, error)
	SeatLayout(org, event, seat uuid.UUID) (hold.SeatView, bool)
	SeatLabel(ctx context.Context, a hold.Actor, event, seat uuid.UUID) string
}

// Releaser releases holds and blocks seats; *hold.Holds satisfies it.
type Releaser interface {
	Release(ctx context.Context, a hold.Actor, holdID uuid.UUID, reason string) (store.Hold, error)
	SetBlocked(ctx context.Context, a hold.Actor, event, seat uuid.UUID, blocked bool, reason string) (int64, error)
}

// HoldByID reads a hold of the organization; *store.Holds satisfies it.
type HoldByID interface {
	ByID(ctx context.Context, org, id uuid.UUID) (store.Hold, error)
}

// BoxOffice is an event's box office for its staff, its panels, and its
// live frame. It keeps where each section of an event starts on the grid.
type BoxOffice struct {
	*frame
	occupancy Counts
	core      BookingFinder
	sections  Sections
	holds     HoldReads
	seats     Seats
	release   Releaser
	holdByID  HoldByID

	mu     sync.Mutex
	layout map[[2]uuid.UUID]map[string]origin
}

const (
	// HoldPageRows is the box office table's page size.
	HoldPageRows = 100
)

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

// Page is an event's box office.
func (p *BoxOffice) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return p.with(w, r, a, r.URL.Query(), "")
}

// with renders the box office with the filters in q and, for an
// email, that customer's lookup.
func (p *BoxOffice) with(w http.ResponseWriter, r *http.Request, a hold.Actor, q url.Values, email string) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	b := views.BoxOffice{EventID: ev.ID.String(), EventName: ev.Name, Mode: p.mode(), Organizer: a.Role == hold.RoleOrganizer,
		HoldKey: "bo-" + uuid.NewString()}
	for _, c := range ev.Categories {
		b.Categories = append(b.Categories, views.Category{Key: c.Key, Name: c.Name})
	}
	occ, err := p.occupancy.Occupancy(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	b.Summary = countsVM(occ.Counts)
	if b.Holds, err = p.holdTable(ctx, a, ev.ID, holdFilter(q)); err != nil {
		return err
	}
	if b.Map, err = p.boxMap(ctx, a, ev.ID, q.Get("map")); err != nil {
		return err
	}
	hs, err := p.core.HouseSeats(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	b.House = houseRows(hs)
	if email != "" {
		if b.Lookup, err = p.lookup(ctx, a, ev.ID, email); err != nil {
			return err
		}
	}
	p.page(w, r, ev, views.BoxOfficePage(p.render.Meta(r, ev.Name+" · box office"), b))
	return nil
}

func (p *BoxOffice) holdTable(ctx context.Context, a hold.Actor, event uuid.UUID, f views.HoldFilter) (views.HoldTable, error) {
	t := views.HoldTable{EventID: event.String(), Filter: f, SellKey: newSellKey()}
	secs, err := p.sections.Sections(ctx, a.Org, event)
	if err != nil {
		return t, err
	}
	for _, sec := range secs {
		t.Sections = append(t.Sections, sec.Label)
	}
	after, err := query.DecodeHoldCursor(f.After)
	if err != nil {
		// A cursor not of ours (edited by hand): the first page.
		after, t.Filter.After = store.HoldCursor{}, ""
	}
	pg, err := p.holds.ActiveHoldsPage(ctx, a.Org, event, store.HoldFilter{Section: f.Section, Holder: f.Holder},
		after, HoldPageRows, true)
	if err != nil {
		return t, err
	}
	t.Rows, t.Total = holdRows(pg.Holds), pg.Total
	if !pg.Next.IsZero() {
		t.Next = query.EncodeHoldCursor(pg.Next)
	}
	return t, nil
}

func holdRows(hs []store.StaffHold) []views.HoldRow {
	out := make([]views.HoldRow, len(hs))
	for i, h := range hs {
		out[i] = views.HoldRow{HoldID: h.ID.String(), SeatID: h.SeatID.String(), Seat: h.Label(), Section: h.Section,
			Email: h.Email, Since: h.CreatedAt, Until: h.HeldUntil, Extended: h.Extensions > 0}
		if h.Customer != nil {
			out[i].Customer = h.Customer.Name + " <" + h.Customer.Email + ">"
		}
	}
	return out
}

// Holds is the holds table alone, filtered and paged.
func (p *BoxOffice) Holds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	t, err := p.holdTable(r.Context(), a, ev.ID, holdFilter(r.URL.Query()))
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.HoldsPanel(t))
	return nil
}

// boxMap lays out one section of the event (the first if section names
// none) with its top-left seat at the grid's second column, first row:
// the first column holds the row letters.
func (p *BoxOffice) boxMap(ctx context.Context, a hold.Actor, event uuid.UUID, section string) (views.BoxMap, error) {
	m := views.BoxMap{EventID: event.String()}
	secs, seats, err := p.seats.SeatViews(ctx, a, event)
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

// origins returns where each section of the event starts on the grid; a
// venue's layout never changes, so it is computed once per event.
func (p *BoxOffice) origins(ctx context.Context, a hold.Actor, event uuid.UUID) (map[string]origin, error) {
	key := [2]uuid.UUID{a.Org, event}
	p.mu.Lock()
	o, ok := p.layout[key]
	p.mu.Unlock()
	if ok {
		return o, nil
	}
	_, seats, err := p.seats.SeatViews(ctx, a, event)
	if err != nil {
		return nil, err
	}
	o = origins(seats)
	p.mu.Lock()
	p.layout[key] = o
	p.mu.Unlock()
	return o, nil
}

func boxSeatVM(event uuid.UUID, st hold.SeatView, o origin) views.Seat {
	return views.Seat{ID: st.ID.String(), EventID: event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Col: st.X - o.x + 2, GridRow: st.Y - o.y + 1, Status: string(st.Status), Version: st.Version}
}

// Map is the box office's seat map alone, of the ?map= section.
func (p *BoxOffice) Map(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	m, err := p.boxMap(r.Context(), a, ev.ID, r.URL.Query().Get("map"))
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.BoxMapPanel(m))
	return nil
}

// lookup finds bookings by reference or email and, for an email, the
// customer's account with their holds and bookings for the event.
func (p *BoxOffice) lookup(ctx context.Context, a hold.Actor, event uuid.UUID, query string) (*views.Lookup, error) {
	if len(query) > 254 || !utf8.ValidString(query) {
		return &views.Lookup{Query: "(invalid)"}, nil
	}
	l := &views.Lookup{Query: query}
	bs, err := p.core.FindBookings(ctx, a, query)
	if err != nil {
		return nil, err
	}
	l.Matches = bookingRows(bs)
	if !strings.Contains(query, "@") {
		return l, nil
	}
	email := strings.ToLower(query)
	l.Email = email
	act, err := p.holds.BuyerActivity(ctx, a.Org, event, email)
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

// Lookup answers the lookup form. The email comes in the body,
// never in the URL, which logs, browser history and Referer headers keep:
// htmx gets the panel, a plain form post the whole page.
func (p *BoxOffice) Lookup(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	email := strings.TrimSpace(v.Get("lookup"))
	if r.Header.Get("HX-Request") != "true" {
		return p.with(w, r, a, v, email)
	}
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	var l *views.Lookup
	if email != "" {
		if l, err = p.lookup(r.Context(), a, ev.ID, email); err != nil {
			return err
		}
	}
	p.page(w, r, ev, views.LookupPanel(ev.ID.String(), holdFilter(v), l))
	return nil
}

// Block blocks the clicked seat of the box office's map.
func (p *BoxOffice) Block(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return p.setBlocked(w, r, a, true)
}

// Unblock unblocks the clicked seat of the box office's map.
func (p *BoxOffice) Unblock(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return p.setBlocked(w, r, a, false)
}

// setBlocked answers a click on the box office map with a message and
// the seat's state; a seat that is held or sold is not blockable, and
// the message says so.
func (p *BoxOffice) setBlocked(w http.ResponseWriter, r *http.Request, a hold.Actor, blocked bool) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	seat, err := httpx.PathID(r, "seat")
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(v.Get("reason"))
	if utf8.RuneCountInString(reason) > reasonMax {
		return apperr.E(apperr.Invalid, "the reason is too long (at most %d characters)", reasonMax)
	}
	ctx := r.Context()
	_, err = p.release.SetBlocked(ctx, a, ev.ID, seat, blocked, reason)
	if err != nil && apperr.CodeOf(err) != apperr.Conflict {
		return err
	}
	label := p.seats.SeatLabel(ctx, a, ev.ID, seat)
	st, ok := p.seats.SeatLayout(a.Org, ev.ID, seat)
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
		orig, err := p.origins(ctx, a, ev.ID)
		if err != nil {
			return err
		}
		comps = append(comps, views.BoxSeat(boxSeatVM(ev.ID, st, orig[st.Section]), true))
	}
	p.page(w, r, ev, templ.Join(comps...))
	return nil
}

// liveFrame is the box office's live frame: rows removed for holds that ended
// (or changed), rows added for current holds, the changed seats of its
// map, and the counts.
func (p *BoxOffice) liveFrame(ctx context.Context, a hold.Actor, b live.StaffBatch) ([]templ.Component, error) {
	occ, err := p.occupancy.Occupancy(ctx, a, b.Event)
	if err != nil {
		return nil, err
	}
	orig, err := p.origins(ctx, a, b.Event)
	if err != nil {
		return nil, err
	}
	comps := []templ.Component{views.ModeBanner(p.mode(), true), views.BoxSummary(countsVM(occ.Counts), true)}
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
		if st, ok := p.seats.SeatLayout(b.Org, b.Event, d.Seat); ok {
			// The change is the truth for this frame; the cache may be
			// newer already.
			st.Status, st.Version = d.Status, d.Version
			comps = append(comps, views.BoxSeat(boxSeatVM(b.Event, st, orig[st.Section]), true))
		}
	}
	if len(held) > 0 {
		// Postgres has the holder's email and the hold's start; a hold
		// that ended since is not found, and its own change removes it.
		hs, err := p.holds.ActiveHolds(ctx, a.Org, b.Event, store.HoldFilter{Seats: held})
		if err != nil {
			return nil, err
		}
		if len(hs) > 0 {
			comps = append(comps, views.HoldRowsOOB(holdRows(hs)))
		}
	}
	return comps, nil
}

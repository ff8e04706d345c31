package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
// map that blocks and unblocks seats, and the box office's live frame.

const (
	// holdPageRows is the box office table's page size.
	holdPageRows = 100
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
	b := views.BoxOffice{EventID: ev.ID.String(), EventName: ev.Name, Mode: s.mode(), Organizer: a.Role == hold.RoleOrganizer,
		HoldKey: "bo-" + uuid.NewString()}
	for _, c := range ev.Categories {
		b.Categories = append(b.Categories, views.Category{Key: c.Key, Name: c.Name})
	}
	occ, err := s.deps.Monitor.Occupancy(ctx, a, ev.ID)
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
	hs, err := s.deps.BoxOffice.HouseSeats(ctx, a, ev.ID)
	if err != nil {
		return err
	}
	b.House = houseRows(hs)
	if email != "" {
		if b.Lookup, err = s.lookup(ctx, a, ev.ID, email); err != nil {
			return err
		}
	}
	s.renderStaff(w, r, ev, views.BoxOfficePage(s.render.Meta(r, ev.Name+" · box office"), b))
	return nil
}

func (s *staffPages) holdTable(ctx context.Context, a hold.Actor, event uuid.UUID, f views.HoldFilter) (views.HoldTable, error) {
	t := views.HoldTable{EventID: event.String(), Filter: f, SellKey: newSellKey()}
	secs, err := s.deps.Store.Events.Sections(ctx, a.Org, event)
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
	p, err := s.deps.Store.Audit.ActiveHoldsPage(ctx, a.Org, event, store.HoldFilter{Section: f.Section, Holder: f.Holder},
		after, holdPageRows, true)
	if err != nil {
		return t, err
	}
	t.Rows, t.Total = holdRows(p.Holds), p.Total
	if !p.Next.IsZero() {
		t.Next = query.EncodeHoldCursor(p.Next)
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
	secs, seats, err := s.deps.Events.SeatViews(ctx, a, event)
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
func (sr *staffPages) origins(ctx context.Context, a hold.Actor, event uuid.UUID) (map[string]origin, error) {
	key := [2]uuid.UUID{a.Org, event}
	sr.mu.Lock()
	o, ok := sr.layout[key]
	sr.mu.Unlock()
	if ok {
		return o, nil
	}
	_, seats, err := sr.deps.Events.SeatViews(ctx, a, event)
	if err != nil {
		return nil, err
	}
	o = origins(seats)
	sr.mu.Lock()
	sr.layout[key] = o
	sr.mu.Unlock()
	return o, nil
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

// lookup finds bookings by reference or email and, for an email, the
// customer's account with their holds and bookings for the event.
func (s *staffPages) lookup(ctx context.Context, a hold.Actor, event uuid.UUID, query string) (*views.Lookup, error) {
	if len(query) > 254 || !utf8.ValidString(query) {
		return &views.Lookup{Query: "(invalid)"}, nil
	}
	l := &views.Lookup{Query: query}
	bs, err := s.deps.BoxOffice.FindBookings(ctx, a, query)
	if err != nil {
		return nil, err
	}
	l.Matches = bookingRows(bs)
	if !strings.Contains(query, "@") {
		return l, nil
	}
	email := strings.ToLower(query)
	l.Email = email
	act, err := s.deps.Store.Audit.BuyerActivity(ctx, a.Org, event, email)
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
	v, err := httpx.Form(w, r)
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
	_, err = s.deps.Holds.SetBlocked(ctx, a, ev.ID, seat, blocked, reason)
	if err != nil && apperr.CodeOf(err) != apperr.Conflict {
		return err
	}
	label := s.deps.Events.SeatLabel(ctx, a, ev.ID, seat)
	st, ok := s.deps.Events.SeatLayout(a.Org, ev.ID, seat)
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

// boxOffice is the box office's frame: rows removed for holds that ended
// (or changed), rows added for current holds, the changed seats of its
// map, and the counts.
func (sr *staffPages) boxOffice(ctx context.Context, a hold.Actor, b live.StaffBatch) ([]templ.Component, error) {
	s := sr
	occ, err := s.deps.Monitor.Occupancy(ctx, a, b.Event)
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
		if st, ok := s.deps.Events.SeatLayout(b.Org, b.Event, d.Seat); ok {
			// The change is the truth for this frame; the cache may be
			// newer already.
			st.Status, st.Version = d.Status, d.Version
			comps = append(comps, views.BoxSeat(boxSeatVM(b.Event, st, orig[st.Section]), true))
		}
	}
	if len(held) > 0 {
		// Postgres has the holder's email and the hold's start; a hold
		// that ended since is not found, and its own change removes it.
		hs, err := s.deps.Store.Audit.ActiveHolds(ctx, a.Org, b.Event, store.HoldFilter{Seats: held})
		if err != nil {
			return nil, err
		}
		if len(hs) > 0 {
			comps = append(comps, views.HoldRowsOOB(holdRows(hs)))
		}
	}
	return comps, nil
}

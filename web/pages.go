package web

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/live"
	"seatd/web/render"
	"seatd/web/session"
)

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if _, ok := session.ActorFrom(r.Context()); ok {
		http.Redirect(w, r, "/events", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	org := r.URL.Query().Get("org")
	if len(org) > 40 {
		org = ""
	}
	s.pages.Render(w, r, http.StatusOK, views.Login(s.pages.Meta(r, "Sign in"), views.LoginForm{Org: org}))
}

func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	slug := strings.ToLower(r.PathValue("org"))
	org, err := s.deps.Store.Accounts.OrgBySlug(r.Context(), slug)
	if err != nil || len(slug) > 40 {
		s.pages.Error(w, r, apperr.E(apperr.NotFound, "no such organization"))
		return
	}
	s.pages.Render(w, r, http.StatusOK, views.Signup(s.pages.Meta(r, "Sign up"), views.SignupForm{OrgSlug: org.Slug, OrgName: org.Name}))
}

func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	evs, err := s.events.List(r.Context(), a)
	if err != nil {
		return err
	}
	s.pages.Render(w, r, http.StatusOK, views.Events(s.pages.Meta(r, "Events"), render.Events(evs)))
	return nil
}

// seatMap builds the venue view of an event for the actor: the overview
// of every seated section and the seats of one (section; the first when
// empty or unknown). Only that section's seats become elements, so the
// page grows with the largest section, not with the venue.
func (s *Server) seatMap(ctx context.Context, a hold.Actor, event uuid.UUID, section string) (views.SeatMap, error) {
	ev, err := s.events.Event(ctx, a, event)
	if err != nil {
		return views.SeatMap{}, err
	}
	_, seats, err := s.deps.Events.SeatViews(ctx, a, event)
	if err != nil {
		return views.SeatMap{}, err
	}
	ga, seats, err := s.gaPanel(ctx, a, event, seats)
	if err != nil {
		return views.SeatMap{}, err
	}
	m := views.SeatMap{EventID: event.String(), EventName: ev.Name, GA: ga}
	for i, c := range ev.Categories {
		m.Categories = append(m.Categories, views.Category{Cat: i + 1, Key: c.Key, Name: c.Name, Color: c.Color,
			Price: render.Price(c.PriceMinor, c.Currency)})
	}
	if err := hold.NotOnSale(ev, time.Now()); err != nil && a.Role == hold.RoleBuyer {
		m.NotOnSale = httpx.Message(err) + "."
	}
	m.Choose = views.Choose{EventID: m.EventID, Categories: m.Categories, Strict: ev.OrphanRule == "strict",
		MaxSeats: s.deps.Cfg.MaxSeatsPerRequest}
	if ev.AccessibleReleaseAt != nil && time.Now().Before(*ev.AccessibleReleaseAt) {
		m.Choose.ReleaseAt = ev.AccessibleReleaseAt.UTC().Format(time.RFC3339)
	}
	m.Overview = overview(seats, m.Choose.ReleaseAt != "")
	for _, b := range m.Overview.Sections {
		m.Choose.Sections = append(m.Choose.Sections, b.Label)
	}
	if len(m.Choose.Sections) > 0 {
		m.Section = m.Choose.Sections[0]
		if slices.Contains(m.Choose.Sections, section) {
			m.Section = section
		}
	}
	var box views.SectionBox
	for i := range m.Overview.Sections {
		if b := &m.Overview.Sections[i]; b.Label == m.Section {
			b.Selected, box = true, *b
		}
	}
	// Seats sit on the section's own grid: column 1 holds the row letters.
	rows := map[string]bool{}
	for _, st := range seats {
		m.Choose.HasAccessible = m.Choose.HasAccessible || st.Accessible
		if st.Section != m.Section {
			continue
		}
		vm := seatVM(event, st, a.User)
		vm.Col, vm.GridRow = st.X-box.X+2, st.Y-box.Y+1
		m.Seats = append(m.Seats, vm)
		if !rows[st.Row] {
			rows[st.Row] = true
			m.Rows = append(m.Rows, views.Label{Text: st.Row, Col: 1, GridRow: vm.GridRow})
		}
	}
	return m, nil
}

// overview outlines every section in venue coordinates with its free
// seats, and encodes every seat's state and version for the page
// script's model of the venue. While accessible and companion seats are
// held back (heldBack), they are not counted free (a buyer who ticks "I
// need accessible seating" sees them counted, and every map counts them
// from the release time on: the page script does both) and their
// indexes are listed for the script.
func overview(seats []hold.SeatView, heldBack bool) views.Overview {
	var o views.Overview
	if len(seats) == 0 {
		return o
	}
	type acc struct{ minX, minY, maxX, maxY, free, total int }
	byLabel := map[string]*acc{}
	var keptIdx []string
	var order []string
	n := 0
	minX, minY, maxX, maxY := seats[0].X, seats[0].Y, seats[0].X, seats[0].Y
	for _, st := range seats {
		b, ok := byLabel[st.Section]
		if !ok {
			b = &acc{minX: st.X, minY: st.Y, maxX: st.X, maxY: st.Y}
			byLabel[st.Section] = b
			order = append(order, st.Section)
		}
		b.minX, b.minY, b.maxX, b.maxY = min(b.minX, st.X), min(b.minY, st.Y), max(b.maxX, st.X), max(b.maxY, st.Y)
		b.total++
		kept := heldBack && seatFlag(st.Seat) != ""
		if st.Status == store.Available && !kept {
			b.free++
		}
		if kept {
			keptIdx = append(keptIdx, strconv.Itoa(st.Idx))
		}
		minX, minY, maxX, maxY = min(minX, st.X), min(minY, st.Y), max(maxX, st.X), max(maxY, st.Y)
		n = max(n, st.Idx+1)
	}
	o.MinX, o.MinY, o.W, o.H = minX, minY, maxX-minX+1, maxY-minY+1
	o.StageH = max(2, (o.W+o.H)/40)
	secOf := make(map[string]int, len(order))
	for i, l := range order {
		b := byLabel[l]
		w, h := b.maxX-b.minX+1, b.maxY-b.minY+1
		// The label and the count below it, centred: up to half a
		// shallow section's depth, a fifth of a narrow one's width.
		fs := max(1, min(w/5, h/3))
		free := max(1, fs*2/3)
		top := b.minY + (h-fs-free)/2
		o.Sections = append(o.Sections, views.SectionBox{Label: l, X: b.minX, Y: b.minY, W: w, H: h,
			Available: b.free, Total: b.total, FontSize: fs, FreeSize: free, TextX: b.minX + w/2, TextY: top + fs, FreeY: top + fs + free})
		secOf[l] = i
	}
	states := bytes.Repeat([]byte{'-'}, n)
	versions := make([]int64, n)
	secs := make([]int, n)
	for _, st := range seats {
		states[st.Idx] = stateLetter(st.Status)
		versions[st.Idx] = st.Version
		secs[st.Idx] = secOf[st.Section]
	}
	o.States = string(states)
	o.Kept = strings.Join(keptIdx, ",")
	var b strings.Builder
	for i := 0; i < n; {
		j := i
		for j < n && versions[j] == versions[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(versions[i], 10))
		if j-i > 1 {
			b.WriteByte('*')
			b.WriteString(strconv.Itoa(j - i))
		}
		i = j
	}
	o.Versions = b.String()
	b.Reset()
	for i := 0; i < n; {
		j := i
		for j < n && secs[j] == secs[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d:%d", i, j-i, secs[i])
		i = j
	}
	o.Runs = b.String()
	return o
}

// stateLetter is a seat's status in the overview's state string.
func stateLetter(st store.SeatStatus) byte {
	switch st {
	case store.Available:
		return 'a'
	case store.Held:
		return 'h'
	case store.Sold:
		return 's'
	default:
		return 'b'
	}
}

// seatVM is a seat without a place on the grid: live frames and click
// answers replace a shown seat, which keeps its place (the page script
// carries it over), and the map places the seats it renders.
func seatVM(event uuid.UUID, st hold.SeatView, viewer uuid.UUID) views.Seat {
	return views.Seat{ID: st.ID.String(), EventID: event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Status: string(st.Status), Version: st.Version, Idx: st.Idx,
		Mine: st.Status == store.Held && st.HolderID == viewer && viewer != uuid.Nil, Cat: st.Cat, Flag: seatFlag(st.Seat)}
}

// seatFlag names a seat's accessibility flag for the map.
func seatFlag(st store.Seat) string {
	switch {
	case st.Accessible:
		return "accessible"
	case st.Companion:
		return "companion"
	}
	return ""
}

func (s *Server) seatMapPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	m, err := s.seatMap(r.Context(), a, event, r.URL.Query().Get("section"))
	if err != nil {
		return err
	}
	c, err := s.cart(r.Context(), a, event)
	if err != nil {
		return err
	}
	s.pages.Render(w, r, http.StatusOK, views.SeatMapPage(s.pages.Meta(r, m.EventName), m, c))
	return nil
}

func (s *Server) venueFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	m, err := s.seatMap(r.Context(), a, event, r.URL.Query().Get("section"))
	if err != nil {
		return err
	}
	s.pages.Render(w, r, http.StatusOK, views.Venue(m))
	return nil
}

// cart lists the actor's active holds for the event.
func (s *Server) cart(ctx context.Context, a hold.Actor, event uuid.UUID) (views.Cart, error) {
	c := views.Cart{EventID: event.String()}
	if a.Role != hold.RoleBuyer {
		return c, nil
	}
	hs, err := s.deps.Holds.Mine(ctx, a, event)
	if err != nil {
		return c, err
	}
	prices, err := s.deps.Events.Prices(ctx, a, event)
	if err != nil {
		return c, err
	}
	ext, err := s.deps.Holds.Extension(ctx, a, event)
	if err != nil {
		return c, err
	}
	c.Extension = moreTime(ext)
	var total render.Sum
	for _, h := range hs {
		item, cat := s.cartHold(a, event, h, prices)
		c.Holds = append(c.Holds, item)
		if p, ok := prices[cat]; ok {
			total.Add(p.PriceMinor, p.Currency)
		}
	}
	c.Total = total.String()
	return c, nil
}

func (s *Server) cartHold(a hold.Actor, event uuid.UUID, h store.Hold, prices map[string]store.Category) (views.CartHold, string) {
	label, cat := h.SeatID.String(), ""
	if st, ok := s.deps.Events.SeatLayout(a.Org, event, h.SeatID); ok {
		label, cat = st.CartLabel(), st.Category
	}
	item := views.CartHold{HoldID: h.ID.String(), SeatID: h.SeatID.String(), Label: label, HeldUntil: h.HeldUntil, Extended: h.Extensions > 0,
		Offer: h.Source == store.SourceWaitlist}
	priced(&item, prices, cat)
	return item, cat
}

// moreTime says how much longer a checkout lets a buyer pay: "5 more
// minutes", "90 more seconds".
func moreTime(d time.Duration) string {
	n, unit := int(d/time.Second), "second"
	if n%60 == 0 {
		n, unit = n/60, "minute"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.Itoa(n) + " more " + unit
}

// priced gives a cart line category cat's price, as shown and in minor
// units for the page's live total; none for a seat without a priced
// category.
func priced(item *views.CartHold, prices map[string]store.Category, cat string) {
	if p, ok := prices[cat]; ok && cat != "" && p.Currency != "" {
		item.Price = render.Price(p.PriceMinor, p.Currency)
		item.PriceMinor, item.Currency, item.Scale = p.PriceMinor, p.Currency, render.Scale(p.Currency)
	}
}

// livePrice prices the cart line of seat st that arrives over the live
// socket; it stays unpriced when the event is not at hand.
func (lr liveRenderer) livePrice(item *views.CartHold, d hold.Delta, st hold.SeatView) {
	prices, err := lr.events.Prices(context.Background(), hold.Actor{Org: d.Org}, d.Event)
	if err == nil {
		priced(item, prices, st.Category)
	}
}

func (s *Server) cartFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	c, err := s.cart(r.Context(), a, event)
	if err != nil {
		return err
	}
	s.pages.Render(w, r, http.StatusOK, views.CartPanel(c))
	return nil
}

// answerCart re-renders the cart with a message, plus the given seats as
// out-of-band swaps so the clicked seat shows its true state at once.
func (s *Server) answerCart(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, msg, kind string, payKey string, seats ...uuid.UUID) error {
	c, err := s.cart(r.Context(), a, event)
	if err != nil {
		return err
	}
	c.Message, c.Kind, c.PayKey = msg, kind, payKey
	comps := []templ.Component{views.CartPanel(c)}
	for _, id := range seats {
		if st, ok := s.deps.Events.SeatLayout(a.Org, event, id); ok {
			comps = append(comps, views.SeatButton(seatVM(event, st, a.User), true))
		}
	}
	s.pages.Render(w, r, http.StatusOK, templ.Join(comps...))
	return nil
}

// toggleSeat holds a free seat for the buyer, or releases it if it is
// already theirs. Refusals are shown in the cart, not as HTTP errors, so
// the page can say what happened.
func (s *Server) toggleSeat(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	seat, err := httpx.PathID(r, "seat")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return s.answerCart(w, r, a, event, "Staff accounts cannot hold seats here; use the box office.", "info", "", seat)
	}
	st, ok := s.deps.Events.SeatLayout(a.Org, event, seat)
	if ok && st.Status == store.Held && st.HolderID == a.User {
		if _, err := s.deps.Holds.Release(r.Context(), a, st.HoldID, ""); err != nil && apperr.CodeOf(err) == apperr.Internal {
			return err
		}
		return s.answerCart(w, r, a, event, "Seat "+st.Label()+" released.", "info", "", seat)
	}
	if err := s.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return s.answerCart(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error", "", seat)
	}
	accessible, companion := choiceOf(r)
	_, err = s.deps.Holds.Hold(r.Context(), a, hold.Request{Event: event, Seats: []uuid.UUID{seat}, Accessible: accessible,
		WithCompanion: companion, Source: hold.SourceWeb})
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		msg := e.Message
		if e.Code == apperr.SeatTaken {
			msg = "Seat " + s.deps.Events.SeatLabel(r.Context(), a, event, seat) + " was just taken by someone else."
		}
		return s.answerCart(w, r, a, event, msg, "error", "", seat)
	}
	return s.answerCart(w, r, a, event, "", "", "", seat)
}

func (s *Server) releaseFromCart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	holdID, err := httpx.PathID(r, "hold")
	if err != nil {
		return err
	}
	h, err := s.deps.Holds.Release(r.Context(), a, holdID, "")
	if err != nil {
		if apperr.CodeOf(err) == apperr.Internal {
			return err
		}
		return s.answerCart(w, r, a, event, "That hold had already ended.", "info", "")
	}
	return s.answerCart(w, r, a, event, "", "", "", h.SeatID)
}

// checkoutCart extends the buyer's holds once and shows the Pay button;
// the idempotency key of this checkout travels in the form, so a double
// submit of Pay buys once.
func (s *Server) checkoutCart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return apperr.E(apperr.Forbidden, "only buyers check out")
	}
	hs, err := s.deps.Holds.Checkout(r.Context(), a, event)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return s.answerCart(w, r, a, event, "Your holds expired; pick your seats again.", "error", "")
	}
	until := hs[0].HeldUntil
	for _, h := range hs {
		if h.HeldUntil.Before(until) {
			until = h.HeldUntil
		}
	}
	msg := "Your seats are held until " + until.UTC().Format("15:04:05 MST") + ". Pay to confirm them."
	return s.answerCart(w, r, a, event, msg, "success", uuid.NewString())
}

// pay buys the listed holds (a plain form post) and shows the booking.
func (s *Server) pay(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return apperr.E(apperr.Forbidden, "only buyers can pay")
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	b, err := s.deps.Holds.Purchase(r.Context(), a, event, v.Get("key"), ids)
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal {
			return err
		}
		msg := e.Message
		if e.Code == apperr.HoldsExpired {
			msg = "Your holds expired before payment; pick your seats again."
		}
		s.sessions.Flash(r.Context(), msg)
		http.Redirect(w, r, "/e/"+event.String(), http.StatusSeeOther) // #nosec G710 -- a parsed UUID on our own path
		return nil
	}
	http.Redirect(w, r, "/bookings/"+b.ID.String(), http.StatusSeeOther)
	return nil
}

func (s *Server) bookingPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, ev, err := s.bookings.WithEvent(r, a)
	if err != nil {
		return err
	}
	out := views.Booking{ID: b.ID.String(), Reference: store.FormatReference(b.Reference), Status: b.Status,
		CancelReason: b.CancelReason, EventName: ev.Name, CreatedAt: b.CreatedAt}
	for _, t := range b.Tickets {
		out.Tickets = append(out.Tickets, views.Ticket{ID: t.ID.String(), Label: cmp.Or(t.Place, "Seat "+t.Seat), Cancelled: t.Cancelled(),
			Price: render.Price(t.PriceMinor, t.Currency)})
	}
	s.pages.Render(w, r, http.StatusOK, views.BookingPage(s.pages.Meta(r, "Booking"), out))
	return nil
}

// liveSocket upgrades to one of the event's live streams. The route's
// authed gate has checked the session and the role (staff streams carry
// holders' emails); here the Origin must be ours (cross-site WebSocket
// hijacking) and the event must belong to the session's organization.
func (s *Server) liveSocket(stream live.Stream) session.Handler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		if !live.SameOrigin(r) {
			return apperr.E(apperr.Forbidden, "cross-origin live connections are refused")
		}
		if err := s.limits.Upgrade(r); err != nil {
			return err
		}
		event, err := httpx.PathID(r, "event")
		if err != nil {
			return err
		}
		// A draft's live view is its organizers' (query.Events).
		if _, err := s.events.Event(r.Context(), a, event); err != nil {
			return err
		}
		s.hub.Serve(w, r, live.Viewer{Actor: a, Event: event, SessionToken: s.sessions.StoredToken(r.Context()),
			SessionDeadline: s.sessions.Deadline(r.Context()), Role: a.Role, Stream: stream})
		return nil
	}
}

// liveRenderer renders a delta into the seat's HTML fragment, once per
// variant per process (the hub calls it).
type liveRenderer struct {
	events *hold.Events
}

func (lr liveRenderer) Render(d hold.Delta, mine bool) []byte {
	st, ok := lr.events.SeatLayout(d.Org, d.Event, d.Seat)
	if !ok {
		return nil
	}
	if b, ga := lr.renderGA(d, mine, st); ga {
		return b
	}
	// The delta is the truth for this frame (the cache may already be newer
	// or, on another goroutine, older).
	st.Status, st.Version = d.Status, d.Version
	vm := views.Seat{ID: d.Seat.String(), EventID: d.Event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Status: string(d.Status), Version: d.Version, Idx: st.Idx,
		Mine: mine && d.Status == store.Held, Cat: st.Cat, Flag: seatFlag(st.Seat)}
	var item *views.CartHold
	if vm.Mine {
		item = &views.CartHold{HoldID: d.HoldID.String(), SeatID: d.Seat.String(), Label: st.CartLabel(), HeldUntil: d.HeldUntil,
			Extended: d.Kind == hold.KindExtended, Offer: d.Kind == hold.KindOffered}
		lr.livePrice(item, d, st)
	}
	var b strings.Builder
	if err := views.LiveSeat(vm, item).Render(context.Background(), &b); err != nil {
		return nil
	}
	return []byte(b.String())
}

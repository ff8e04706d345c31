package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/live"
)

// pageHandler handles a page request of a signed-in user.
type pageHandler func(w http.ResponseWriter, r *http.Request, a hold.Actor) error

// page is authed for HTML: without a session it redirects to sign-in,
// and errors render as an error page with the right status.
func (s *Server) page(allowed roles, h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := actorFrom(r.Context())
		if !ok {
			if r.Header.Get("HX-Request") == "true" {
				w.Header().Set("HX-Redirect", "/login")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if roleBit(a.Role)&allowed&roleMask == 0 {
			s.renderError(w, r, apperr.E(apperr.Forbidden, "your account cannot open this page"))
			return
		}
		if err := h(w, r, a); err != nil {
			s.renderError(w, r, err)
		}
	}
}

// renderError shows an error as a page; internal errors are logged and
// shown as a generic sentence.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := apperr.As(err)
	status := http.StatusInternalServerError
	msg := internalMessage
	if ok {
		status, msg = statusOf(e.Code), e.Message
	}
	if status == http.StatusInternalServerError {
		if r.Context().Err() != nil {
			return // the browser went away; nobody reads the page
		}
		s.log.ErrorContext(r.Context(), "page error", "path", r.URL.Path, "err", err)
		msg = internalMessage
	}
	s.render(w, r, status, views.ErrorPage(s.pageMeta(r, http.StatusText(status)), status, msg))
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		s.log.WarnContext(r.Context(), "render", "path", r.URL.Path, "err", err)
	}
}

func (s *Server) pageMeta(r *http.Request, title string) views.Page {
	p := views.Page{Title: title, Asset: s.assets.Path}
	if _, ok := actorFrom(r.Context()); ok {
		ctx := r.Context()
		p.User = &views.User{Email: s.sessions.GetString(ctx, sessEmail), Role: s.sessions.GetString(ctx, sessRole),
			OrgName: s.sessions.GetString(ctx, sessOrgName), OrgSlug: s.sessions.GetString(ctx, sessOrgSlug)}
		p.Flash = s.sessions.PopString(ctx, sessFlash)
	}
	return p
}

const sessFlash = "flash"

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if _, ok := actorFrom(r.Context()); ok {
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
	s.render(w, r, http.StatusOK, views.Login(s.pageMeta(r, "Sign in"), views.LoginForm{Org: org}))
}

func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	slug := strings.ToLower(r.PathValue("org"))
	org, err := s.deps.Store.OrgBySlug(r.Context(), slug)
	if err != nil || len(slug) > 40 {
		s.renderError(w, r, apperr.E(apperr.NotFound, "no such organization"))
		return
	}
	s.render(w, r, http.StatusOK, views.Signup(s.pageMeta(r, "Sign up"), views.SignupForm{OrgSlug: org.Slug, OrgName: org.Name}))
}

func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	evs, err := s.deps.Store.Events(r.Context(), a.Org)
	if err != nil {
		return err
	}
	if !a.Staff() {
		// A draft is the organizer's until it is published.
		evs = slices.DeleteFunc(evs, func(e store.Event) bool { return e.Status == store.EventDraft })
	}
	s.render(w, r, http.StatusOK, views.Events(s.pageMeta(r, "Events"), eventsVM(evs)))
	return nil
}

func eventsVM(evs []store.Event) []views.Event {
	out := make([]views.Event, len(evs))
	for i, e := range evs {
		out[i] = views.Event{ID: e.ID.String(), Name: e.Name, Venue: e.Venue, StartsAt: e.StartsAt.In(venueTime(e)),
			Seats: e.Seats, Status: string(e.Status)}
	}
	return out
}

// seatMap builds the venue view of an event for the actor.
func (s *Server) seatMap(ctx context.Context, a hold.Actor, event uuid.UUID) (views.SeatMap, error) {
	ev, err := s.deps.Store.Event(ctx, a.Org, event)
	if err != nil {
		return views.SeatMap{}, err
	}
	_, seats, err := s.deps.Core.SeatViews(ctx, a, event)
	if err != nil {
		return views.SeatMap{}, err
	}
	ga, seats, err := s.gaPanel(ctx, a, event, seats)
	if err != nil {
		return views.SeatMap{}, err
	}
	m := views.SeatMap{EventID: event.String(), EventName: ev.Name, Seats: make([]views.Seat, len(seats)), GA: ga}
	for i, c := range ev.Categories {
		m.Categories = append(m.Categories, views.Category{Cat: i + 1, Key: c.Key, Name: c.Name, Color: c.Color,
			Price: formatPrice(c.PriceMinor, c.Currency)})
	}
	if err := hold.NotOnSale(ev, time.Now()); err != nil && a.Role == hold.RoleBuyer {
		m.NotOnSale = apperrMessage(err) + "."
	}
	type bounds struct{ minX, minY int }
	secs := map[string]*bounds{}
	var order []string
	rows := map[[2]string]views.Label{}
	m.Choose = views.Choose{EventID: m.EventID, Categories: m.Categories, Strict: ev.OrphanRule == "strict"}
	if ev.AccessibleReleaseAt != nil && time.Now().Before(*ev.AccessibleReleaseAt) {
		m.Choose.ReleaseAt = ev.AccessibleReleaseAt.UTC().Format(time.RFC3339)
	}
	for i, st := range seats {
		m.Seats[i] = seatVM(event, st, a.User)
		m.Choose.HasAccessible = m.Choose.HasAccessible || st.Accessible
		if !slices.Contains(m.Choose.Sections, st.Section) {
			m.Choose.Sections = append(m.Choose.Sections, st.Section)
		}
		b, ok := secs[st.Section]
		if !ok {
			b = &bounds{st.X, st.Y}
			secs[st.Section] = b
			order = append(order, st.Section)
		}
		b.minX, b.minY = min(b.minX, st.X), min(b.minY, st.Y)
	}
	for _, st := range seats {
		k := [2]string{st.Section, st.Row}
		if _, ok := rows[k]; !ok {
			rows[k] = views.Label{Text: st.Row, Col: secs[st.Section].minX + gridOffset - 1, GridRow: st.Y + gridOffset}
		}
	}
	for _, sec := range order {
		b := secs[sec]
		m.Sections = append(m.Sections, views.Label{Text: "Section " + sec, Col: b.minX + gridOffset, GridRow: b.minY + gridOffset - 1})
	}
	for _, st := range seats { // keep row labels in seat order
		k := [2]string{st.Section, st.Row}
		if l, ok := rows[k]; ok {
			m.Rows = append(m.Rows, l)
			delete(rows, k)
		}
	}
	return m, nil
}

// gridOffset shifts venue coordinates right and down on the grid, leaving
// room for section names above and row letters to the left.
const gridOffset = 3

func seatVM(event uuid.UUID, st hold.SeatView, viewer uuid.UUID) views.Seat {
	return views.Seat{ID: st.ID.String(), EventID: event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Col: st.X + gridOffset, GridRow: st.Y + gridOffset, Status: string(st.Status), Version: st.Version,
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
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	m, err := s.seatMap(r.Context(), a, event)
	if err != nil {
		return err
	}
	c, err := s.cart(r.Context(), a, event)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, views.SeatMapPage(s.pageMeta(r, m.EventName), m, c))
	return nil
}

func (s *Server) venueFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	m, err := s.seatMap(r.Context(), a, event)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, views.Venue(m))
	return nil
}

// cart lists the actor's active holds for the event.
func (s *Server) cart(ctx context.Context, a hold.Actor, event uuid.UUID) (views.Cart, error) {
	c := views.Cart{EventID: event.String()}
	if a.Role != hold.RoleBuyer {
		return c, nil
	}
	hs, err := s.deps.Core.Holds(ctx, a, event)
	if err != nil {
		return c, err
	}
	prices, err := s.deps.Core.Prices(ctx, a, event)
	if err != nil {
		return c, err
	}
	var total sum
	for _, h := range hs {
		item, cat := s.cartHold(a, event, h, prices)
		c.Holds = append(c.Holds, item)
		if p, ok := prices[cat]; ok {
			total.add(p.PriceMinor, p.Currency)
		}
	}
	c.Total = total.String()
	return c, nil
}

func (s *Server) cartHold(a hold.Actor, event uuid.UUID, h store.Hold, prices map[string]store.Category) (views.CartHold, string) {
	label, cat := h.SeatID.String(), ""
	if st, ok := s.deps.Core.SeatLayout(a.Org, event, h.SeatID); ok {
		label, cat = st.Label(), st.Category
	}
	item := views.CartHold{HoldID: h.ID.String(), SeatID: h.SeatID.String(), Label: label, HeldUntil: h.HeldUntil, Extended: h.Extensions > 0,
		Offer: h.Source == store.SourceWaitlist}
	if p, ok := prices[cat]; ok && cat != "" {
		item.Price = formatPrice(p.PriceMinor, p.Currency)
	}
	return item, cat
}

func (s *Server) cartFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	c, err := s.cart(r.Context(), a, event)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, views.CartPanel(c))
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
		if st, ok := s.deps.Core.SeatLayout(a.Org, event, id); ok {
			comps = append(comps, views.SeatButton(seatVM(event, st, a.User), true))
		}
	}
	s.render(w, r, http.StatusOK, templ.Join(comps...))
	return nil
}

// toggleSeat holds a free seat for the buyer, or releases it if it is
// already theirs. Refusals are shown in the cart, not as HTTP errors, so
// the page can say what happened.
func (s *Server) toggleSeat(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	seat, err := pathID(r, "seat")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return s.answerCart(w, r, a, event, "Staff accounts cannot hold seats here; use the box office.", "info", "", seat)
	}
	st, ok := s.deps.Core.SeatLayout(a.Org, event, seat)
	if ok && st.Status == store.Held && st.HolderID == a.User {
		if _, err := s.deps.Core.Release(r.Context(), a, st.HoldID, ""); err != nil && apperr.CodeOf(err) == apperr.Internal {
			return err
		}
		return s.answerCart(w, r, a, event, "Seat "+st.Label()+" released.", "info", "", seat)
	}
	if err := s.limits.allowHold(r.Context(), a, s.deps.Cfg.HoldRatePerMinute); err != nil {
		return s.answerCart(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error", "", seat)
	}
	_, err = s.deps.Core.HoldChosen(r.Context(), a, event, []uuid.UUID{seat}, hold.SourceWeb, choiceOf(r))
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		msg := e.Message
		if e.Code == apperr.SeatTaken {
			msg = "Seat " + s.deps.Core.SeatLabel(r.Context(), a, event, seat) + " was just taken by someone else."
		}
		return s.answerCart(w, r, a, event, msg, "error", "", seat)
	}
	return s.answerCart(w, r, a, event, "", "", "", seat)
}

func (s *Server) releaseFromCart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	holdID, err := pathID(r, "hold")
	if err != nil {
		return err
	}
	h, err := s.deps.Core.Release(r.Context(), a, holdID, "")
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
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return apperr.E(apperr.Forbidden, "only buyers check out")
	}
	hs, err := s.deps.Core.Checkout(r.Context(), a, event)
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
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return apperr.E(apperr.Forbidden, "only buyers can pay")
	}
	v, err := form(w, r)
	if err != nil {
		return err
	}
	ids, err := bodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	b, err := s.deps.Core.Purchase(r.Context(), a, event, v.Get("key"), ids)
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || e.Code == apperr.Internal {
			return err
		}
		msg := e.Message
		if e.Code == apperr.HoldsExpired {
			msg = "Your holds expired before payment; pick your seats again."
		}
		s.sessions.Put(r.Context(), sessFlash, msg)
		http.Redirect(w, r, "/e/"+event.String(), http.StatusSeeOther) // #nosec G710 -- a parsed UUID on our own path
		return nil
	}
	http.Redirect(w, r, "/bookings/"+b.ID.String(), http.StatusSeeOther)
	return nil
}

func (s *Server) bookingPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := pathID(r, "booking")
	if err != nil {
		return err
	}
	b, err := s.deps.Core.Booking(r.Context(), a, id)
	if err != nil {
		return err
	}
	ev, err := s.deps.Store.Event(r.Context(), a.Org, b.EventID)
	if err != nil {
		return err
	}
	out := views.Booking{ID: b.ID.String(), Reference: store.FormatReference(b.Reference), Status: b.Status,
		CancelReason: b.CancelReason, EventName: ev.Name, CreatedAt: b.CreatedAt}
	for _, t := range b.Tickets {
		out.Tickets = append(out.Tickets, views.Ticket{ID: t.ID.String(), Label: t.Seat, Cancelled: t.Cancelled(),
			Price: formatPrice(t.PriceMinor, t.Currency)})
	}
	s.render(w, r, http.StatusOK, views.BookingPage(s.pageMeta(r, "Booking"), out))
	return nil
}

// liveSocket upgrades to one of the event's live streams. The route's
// authed gate has checked the session and the role (staff streams carry
// holders' emails); here the Origin must be ours (cross-site WebSocket
// hijacking) and the event must belong to the session's organization.
func (s *Server) liveSocket(stream live.Stream) apiHandler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		if !live.SameOrigin(r) {
			return apperr.E(apperr.Forbidden, "cross-origin live connections are refused")
		}
		if err := s.limits.allowUpgrade(r.Context(), s.subject(r), s.deps.Cfg.UpgradeRatePerMinute); err != nil {
			return err
		}
		event, err := pathID(r, "event")
		if err != nil {
			return err
		}
		if _, err := s.deps.Store.Event(r.Context(), a.Org, event); err != nil {
			return err
		}
		s.hub.Serve(w, r, live.Viewer{Actor: a, Event: event, SessionToken: storedToken(s.sessions.Token(r.Context())),
			SessionDeadline: s.sessionDeadline(r.Context()), Role: a.Role, Stream: stream})
		return nil
	}
}

// liveRenderer renders a delta into the seat's HTML fragment, once per
// variant per process (the hub calls it).
type liveRenderer struct {
	core Core
}

func (lr liveRenderer) Render(d hold.Delta, mine bool) []byte {
	st, ok := lr.core.SeatLayout(d.Org, d.Event, d.Seat)
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
		Col: st.X + gridOffset, GridRow: st.Y + gridOffset, Status: string(d.Status), Version: d.Version,
		Mine: mine && d.Status == store.Held, Cat: st.Cat, Flag: seatFlag(st.Seat)}
	var item *views.CartHold
	if vm.Mine {
		item = &views.CartHold{HoldID: d.HoldID.String(), SeatID: d.Seat.String(),
			Label: vm.Label(), HeldUntil: d.HeldUntil, Extended: d.Kind == hold.KindExtended, Offer: d.Kind == hold.KindOffered}
	}
	var b strings.Builder
	if err := views.LiveSeat(vm, item).Render(context.Background(), &b); err != nil {
		return nil
	}
	return []byte(b.String())
}

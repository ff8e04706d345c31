package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// waitlistInput is a request to wait for seats (docs/architecture.md#the-waitlist).
type waitlistInput struct {
	Count      int    `json:"count" validate:"required,min=1,max=100"`
	Category   string `json:"category" validate:"max=40"`
	Section    string `json:"section" validate:"max=100"`
	Accessible bool   `json:"accessible"`
}

type waitlistJSON struct {
	ID         string     `json:"id"`
	EventID    string     `json:"event_id"`
	Count      int        `json:"count"`
	Category   string     `json:"category,omitempty"`
	SectionID  string     `json:"section_id,omitempty"`
	Section    string     `json:"section,omitempty"`
	Accessible bool       `json:"accessible"`
	Status     string     `json:"status"`
	Position   int        `json:"position"`
	HoldIDs    []string   `json:"hold_ids,omitempty"`
	OfferUntil *time.Time `json:"offer_until,omitempty"`
	Offer      string     `json:"offer,omitempty"` // offered entries: held (in the cart), bought or ended
	CreatedAt  time.Time  `json:"created_at"`
}

func waitlistView(e store.WaitlistEntry) waitlistJSON {
	v := waitlistJSON{ID: e.ID.String(), EventID: e.Event.String(), Count: e.Seats, Category: e.Category,
		Section: e.SectionLabel, Accessible: e.Accessible, Status: e.Status, Position: e.Position, Offer: e.Offer,
		CreatedAt: e.CreatedAt}
	if e.SectionLabel != "" {
		v.SectionID = e.Section.String()
	}
	for _, id := range e.HoldIDs {
		v.HoldIDs = append(v.HoldIDs, id.String())
	}
	if !e.OfferUntil.IsZero() {
		v.OfferUntil = &e.OfferUntil
	}
	return v
}

// joinWaitlist puts the buyer in line: 201 {id, position, ...}.
func (s *Server) joinWaitlist(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in waitlistInput
	if err := s.dec.JSON(w, r, &in); err != nil {
		return err
	}
	e, err := s.deps.Waitlist.Join(r.Context(), a, event, hold.WaitFor{Count: in.Count,
		Category: strings.TrimSpace(in.Category), Section: strings.TrimSpace(in.Section), Accessible: in.Accessible})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, waitlistView(e))
	return nil
}

// myWaitlist lists the buyer's entries for the event (waiting, offered).
func (s *Server) myWaitlist(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return httpx.List(w, "entries", waitlistView)(s.deps.Waitlist.Mine(r.Context(), a, event))
}

// eventWaitlist is the staff's view: how many wait, and the first in line.
func (s *Server) eventWaitlist(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	n, first, err := s.deps.Waitlist.Line(r.Context(), a, event, 20)
	if err != nil {
		return err
	}
	out := make([]waitlistJSON, len(first))
	for i, e := range first {
		out[i] = waitlistView(e)
		out[i].HoldIDs = nil
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"waiting": n, "first": out})
	return nil
}

// leaveWaitlist takes an entry out of line: 204.
func (s *Server) leaveWaitlist(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "entry")
	if err != nil {
		return err
	}
	if err := s.deps.Waitlist.Leave(r.Context(), a, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// waitlistStatus renders the buyer's waitlist panel with an optional
// message. Lapsed offers are history, not shown.
func (s *Server) waitlistStatus(w http.ResponseWriter, r *http.Request, a hold.Actor, msg string) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	es, err := s.deps.Waitlist.Mine(r.Context(), a, event)
	if err != nil {
		return err
	}
	s.pages.Render(w, r, http.StatusOK, views.WaitlistStatus(waitlistVM(event, es, time.Now(), msg)))
	return nil
}

// waitlistVM is a buyer's panel of their entries (newest first). An
// offer shows while its seats are in the cart, and as bought once paid
// for; one whose seats went back (released, or lapsed) is history, not
// shown. While an offer is in the cart, the panel fetches itself again
// when the offer's time is up.
func waitlistVM(event uuid.UUID, es []store.WaitlistEntry, now time.Time, msg string) views.Waitlist {
	vm := views.Waitlist{EventID: event.String(), Message: msg}
	for _, e := range es {
		we := render.WaitEntry(e)
		if e.Status == store.WaitlistOffered {
			switch e.Offer {
			case store.OfferBought:
				we.Status = views.WaitBought
			case store.OfferHeld:
				if in := e.OfferUntil.Sub(now); in > 0 && (vm.LapseIn == 0 || in < vm.LapseIn) {
					vm.LapseIn = in
				}
			default:
				continue
			}
		}
		vm.Entries = append(vm.Entries, we)
	}
	return vm
}

// livePanels renders buyers' waitlist panels for the live hub
// (live.WaitlistRenderer). The hub checked that the event belongs to org
// and asks only for buyers with a socket on it.
type livePanels struct {
	store *store.Waitlist
}

func (lp livePanels) RenderWaitlists(ctx context.Context, org, event uuid.UUID, users []uuid.UUID) (map[uuid.UUID][]byte, []byte, error) {
	es, err := lp.store.OfUsers(ctx, org, event, users)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	panels := map[uuid.UUID][]byte{}
	// The entries come grouped by buyer.
	for len(es) > 0 {
		n := 1
		for n < len(es) && es[n].User == es[0].User {
			n++
		}
		vm := waitlistVM(event, es[:n], now, "")
		user := es[0].User
		es = es[n:]
		if len(vm.Entries) == 0 {
			continue
		}
		vm.Live = true
		b, err := render.Bytes(ctx, views.WaitlistStatus(vm))
		if err != nil {
			return nil, nil, err
		}
		panels[user] = b
	}
	cleared, err := render.Bytes(ctx, views.WaitlistStatus(views.Waitlist{EventID: event.String(), Live: true}))
	if err != nil {
		return nil, nil, err
	}
	return panels, cleared, nil
}

func (s *Server) waitlistFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.waitlistStatus(w, r, a, "")
}

// joinWaitlistForm is the page's join: refusals are shown in the panel.
func (s *Server) joinWaitlistForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	vs, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(vs.Get("count")))
	if err != nil {
		return s.waitlistStatus(w, r, a, "Say how many seats you want.")
	}
	_, err = s.deps.Waitlist.Join(r.Context(), a, event, hold.WaitFor{Count: n, Category: strings.TrimSpace(vs.Get("category")),
		Section: strings.TrimSpace(vs.Get("section")), Accessible: vs.Get("accessible") == "on"})
	if e, ok := httpx.DomainError(err); ok && e.Code != apperr.Internal && e.Code != apperr.NotFound {
		return s.waitlistStatus(w, r, a, e.Message)
	}
	if err != nil {
		return err
	}
	return s.waitlistStatus(w, r, a, "")
}

func (s *Server) leaveWaitlistForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "entry")
	if err != nil {
		return err
	}
	if err := s.deps.Waitlist.Leave(r.Context(), a, id); err != nil && apperr.CodeOf(err) != apperr.Conflict {
		return err
	}
	return s.waitlistStatus(w, r, a, "")
}

// staffWaitlistFragment is the dashboard's waitlist panel.
func (p *staffPages) staffWaitlistFragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	n, first, err := p.deps.Waitlist.Line(r.Context(), a, event, staffWaitlistFirst)
	if err != nil {
		return err
	}
	p.pages.Render(w, r, http.StatusOK, views.StaffWaitlistPanel(staffWaitlistVM(event, n, first), false))
	return nil
}

// staffWaitlistFirst is how many of the line the dashboard lists.
const staffWaitlistFirst = 10

func staffWaitlistVM(event uuid.UUID, waiting int, first []store.WaitlistEntry) views.StaffWaitlist {
	vm := views.StaffWaitlist{EventID: event.String(), Waiting: waiting}
	for _, e := range first {
		vm.First = append(vm.First, render.WaitEntry(e))
	}
	return vm
}

// RenderStaffWaitlist renders the dashboard's waitlist panel, out of band
// (live.WaitlistRenderer).
func (lp livePanels) RenderStaffWaitlist(ctx context.Context, org, event uuid.UUID) ([]byte, error) {
	n, first, err := lp.store.OfEvent(ctx, org, event, staffWaitlistFirst)
	if err != nil {
		return nil, err
	}
	return render.Bytes(ctx, views.StaffWaitlistPanel(staffWaitlistVM(event, n, first), true))
}

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

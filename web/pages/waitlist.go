package pages

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

// WaitlistCore is what the buyer's waitlist panel asks of the hold core;
// *hold.Waitlist satisfies it.
type WaitlistCore interface {
	Join(ctx context.Context, a hold.Actor, event uuid.UUID, w hold.WaitFor) (store.WaitlistEntry, error)
	Mine(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.WaitlistEntry, error)
	Leave(ctx context.Context, a hold.Actor, id uuid.UUID) error
}

// WaitlistReads reads the entries of several buyers at once, grouped by
// buyer; *store.Waitlist satisfies it.
type WaitlistReads interface {
	OfUsers(ctx context.Context, org, event uuid.UUID, users []uuid.UUID) ([]store.WaitlistEntry, error)
}

// Waitlist is the buyer's waitlist panel on the seat map
// (docs/architecture.md#the-waitlist): their place in line, joining and
// leaving.
type Waitlist struct {
	render Renderer
	core   WaitlistCore
}

// status renders the buyer's waitlist panel with an optional
// message. Lapsed offers are history, not shown.
func (p *Waitlist) status(w http.ResponseWriter, r *http.Request, a hold.Actor, msg string) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	es, err := p.core.Mine(r.Context(), a, event)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.WaitlistStatus(waitlistVM(event, es, time.Now(), msg)))
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

// WaitlistPanels renders buyers' waitlist panels for the live hub (the
// buyers' half of live.WaitlistRenderer). The hub checked that the event
// belongs to org and asks only for buyers with a socket on it.
type WaitlistPanels struct {
	store WaitlistReads
}

// RenderWaitlists renders the panels of users (see live.WaitlistRenderer).
func (lp *WaitlistPanels) RenderWaitlists(ctx context.Context, org, event uuid.UUID, users []uuid.UUID) (map[uuid.UUID][]byte, []byte, error) {
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

// Fragment is the buyer's waitlist panel.
func (p *Waitlist) Fragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return p.status(w, r, a, "")
}

// Join is the page's join: refusals are shown in the panel.
func (p *Waitlist) Join(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
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
		return p.status(w, r, a, "Say how many seats you want.")
	}
	_, err = p.core.Join(r.Context(), a, event, hold.WaitFor{Count: n, Category: strings.TrimSpace(vs.Get("category")),
		Section: strings.TrimSpace(vs.Get("section")), Accessible: vs.Get("accessible") == "on"})
	if e, ok := httpx.DomainError(err); ok && e.Code != apperr.Internal && e.Code != apperr.NotFound {
		return p.status(w, r, a, e.Message)
	}
	if err != nil {
		return err
	}
	return p.status(w, r, a, "")
}

// Leave takes one of the buyer's entries out of line.
func (p *Waitlist) Leave(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "entry")
	if err != nil {
		return err
	}
	if err := p.core.Leave(r.Context(), a, id); err != nil && apperr.CodeOf(err) != apperr.Conflict {
		return err
	}
	return p.status(w, r, a, "")
}

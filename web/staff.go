package web

import (
	"context"
	"net/http"
	"sync"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/live"
	"seatd/web/render"
)

// Staff pages: the organizer's dashboard (dashboard.go, registrypanel.go),
// the box office (boxoffice.go, release.go) and the audit log (audit.go).
// This file holds what they share: the event they are about, how they
// render, and the staff frames the hub pushes to their sockets.

const (
	// reasonMax is the longest release or block reason, in characters.
	reasonMax = 500
)

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

func newStaffPages(s *Server) *staffPages {
	return &staffPages{Server: s, charts: map[[2]uuid.UUID]*chartCache{}, layout: map[[2]uuid.UUID]map[string]origin{},
		registry: map[[2]uuid.UUID]*registryCheck{}}
}

var _ live.StaffRenderer = (*staffPages)(nil)

// staffEvent resolves the {event} of a staff page within the actor's
// organization (404 otherwise).
func (s *staffPages) staffEvent(r *http.Request, a hold.Actor) (store.Event, error) {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return store.Event{}, err
	}
	return s.deps.Store.Events.Event(r.Context(), a.Org, id)
}

// renderStaff renders a staff page or fragment with the event known to the
// navigation bar.
func (s *staffPages) renderStaff(w http.ResponseWriter, r *http.Request, ev store.Event, c templ.Component) {
	ctx := views.WithEventNav(r.Context(), views.EventNav{ID: ev.ID.String()})
	s.render.Render(w, r.WithContext(ctx), http.StatusOK, c)
}

// internalText logs an internal error and returns what a panel shows
// instead; a domain error's message is shown as is.
func (s *staffPages) internalText(ctx context.Context, what string, err error) string {
	if e, ok := httpx.DomainError(err); ok && e.Code != apperr.Internal {
		return e.Message
	}
	s.log.ErrorContext(ctx, what, "err", err)
	return httpx.InternalMessage
}

func (s *staffPages) mode() views.Mode {
	return views.Mode{FastPath: s.deps.Engine.FastPath(), Breaker: s.deps.Engine.BreakerState()}
}

func countsVM(c store.Counts) views.Counts {
	return views.Counts{Available: c.Available, Held: c.Held, Sold: c.Sold, Blocked: c.Blocked}
}

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
		out, err = render.Bytes(ctx, comps...)
	}
	if err != nil {
		if ctx.Err() == nil {
			sr.log.Error("render staff frame", "stream", st.String(), "org", b.Org, "event", b.Event, "err", err)
		}
		return nil
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Package staff is the organizer's and the box office's side of the site:
// the event admin pages, the dashboard (occupancy and its check, the
// expiry forecast, the occupancy chart, the activity feed, the waitlist
// and the registry panels), the audit log, the box office (the holds
// table, the customer lookup, the map that blocks seats, releasing holds)
// and its counter (customer holds, sales, confirmations, cancellations,
// house seats), the charts, API keys and webhooks pages, and the frames
// the live hub pushes to dashboards and box offices. Handlers decode a
// form, call the hold core and render a templ component (views).
package staff

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

const (
	// reasonMax is the longest release or block reason, in characters.
	reasonMax = 500
)

// Renderer renders pages and fragments; *render.Pages satisfies it.
type Renderer interface {
	Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component)
	Meta(r *http.Request, title string) views.Page
}

// VisibleEvents reads the organization's events (staff see them all);
// *query.Events satisfies it.
type VisibleEvents interface {
	Event(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Event, error)
	FromPath(r *http.Request, a hold.Actor) (store.Event, error)
	List(ctx context.Context, a hold.Actor) ([]store.Event, error)
}

// Flash keeps a message for the next page; *session.Sessions satisfies
// it.
type Flash interface {
	Flash(ctx context.Context, msg string)
}

// Mode says how holds go in this process; *hold.Engine satisfies it.
type Mode interface {
	FastPath() bool
	BreakerState() string
}

// frame is what every staff page shares: the event it is about, how it
// renders, the way back to a page with a message, and the hold core's
// mode its banner shows.
type frame struct {
	render  Renderer
	visible VisibleEvents
	flash   Flash
	engine  Mode
	log     *slog.Logger
}

// page renders a staff page or fragment with the event known to the
// navigation bar.
func (f *frame) page(w http.ResponseWriter, r *http.Request, ev store.Event, c templ.Component) {
	ctx := views.WithEventNav(r.Context(), views.EventNav{ID: ev.ID.String()})
	f.render.Render(w, r.WithContext(ctx), http.StatusOK, c)
}

// backWith redirects to a page of this site that shows msg as its flash.
// to is always built here from a path and escaped query values.
func (f *frame) backWith(w http.ResponseWriter, r *http.Request, to, msg string) error {
	f.flash.Flash(r.Context(), msg)
	http.Redirect(w, r, to, http.StatusSeeOther) // #nosec G710 -- a local path built here ("/box-office/events/<uuid>?..."), not user input
	return nil
}

// flashAndReturn ends a form post whose refusal is the user's to read: a
// conflict's message, or ok when err is nil, goes in the flash and the
// browser goes back to page; any other error is the error page's.
func (f *frame) flashAndReturn(w http.ResponseWriter, r *http.Request, err error, ok, page string) error {
	switch {
	case apperr.CodeOf(err) == apperr.Conflict:
		return f.backWith(w, r, page, httpx.Message(err))
	case err != nil:
		return err
	}
	return f.backWith(w, r, page, ok)
}

// boxForm is what a box-office form post that goes back to the box office
// starts with: the event of its path, its values and the page to go back
// to.
type boxForm struct {
	ev   store.Event
	v    url.Values
	back string
}

// boxForm reads the {event} of the path and the form.
func (f *frame) boxForm(w http.ResponseWriter, r *http.Request, a hold.Actor) (boxForm, error) {
	ev, err := f.visible.FromPath(r, a)
	if err != nil {
		return boxForm{}, err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return boxForm{}, err
	}
	return boxForm{ev: ev, v: v, back: "/box-office/events/" + ev.ID.String()}, nil
}

// internalText logs an internal error and returns what a panel shows
// instead; a domain error's message is shown as is.
func (f *frame) internalText(ctx context.Context, what string, err error) string {
	if e, ok := httpx.DomainError(err); ok && e.Code != apperr.Internal {
		return e.Message
	}
	f.log.ErrorContext(ctx, what, "err", err)
	return httpx.InternalMessage
}

func (f *frame) mode() views.Mode {
	return views.Mode{FastPath: f.engine.FastPath(), Breaker: f.engine.BreakerState()}
}

func countsVM(c store.Counts) views.Counts {
	return views.Counts{Available: c.Available, Held: c.Held, Sold: c.Sold, Blocked: c.Blocked}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Package query holds the reads the handlers of web/api, web/pages and
// web/staff share beside the hold core, with the rules the web layer puts
// on them: an event as the actor of a request may see it (a draft is its
// organizers' until it is published), a booking with its event, a page of
// an endpoint's webhook deliveries, and the opaque cursor of a page of
// active holds.
package query

import (
	"context"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// EventStore reads events; *store.Events satisfies it.
type EventStore interface {
	Event(ctx context.Context, org, id uuid.UUID) (store.Event, error)
	List(ctx context.Context, org uuid.UUID) ([]store.Event, error)
}

// Events reads the events of the actor's organization that the actor may
// see.
type Events struct {
	store EventStore
}

// NewEvents returns the reads of events in st.
func NewEvents(st EventStore) *Events { return &Events{store: st} }

// ErrNoEvent is the answer for an event the actor may not see, as for one
// that does not exist.
var ErrNoEvent = apperr.E(apperr.NotFound, "event not found")

// Hidden says whether e is a draft the actor may not see: a draft is its
// organizers' until it is published; to a buyer it does not exist.
func Hidden(a hold.Actor, e store.Event) bool { return !a.Staff() && e.Status == store.EventDraft }

// Event reads an event the actor may see.
func (q *Events) Event(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Event, error) {
	e, err := q.store.Event(ctx, a.Org, id)
	if err == nil && Hidden(a, e) {
		return store.Event{}, ErrNoEvent
	}
	return e, err
}

// FromPath reads the {event} of the request's path, as Event does.
func (q *Events) FromPath(r *http.Request, a hold.Actor) (store.Event, error) {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return store.Event{}, err
	}
	return q.Event(r.Context(), a, id)
}

// List reads the organization's events, less the drafts the actor may not
// see.
func (q *Events) List(ctx context.Context, a hold.Actor) ([]store.Event, error) {
	evs, err := q.store.List(ctx, a.Org)
	return slices.DeleteFunc(evs, func(e store.Event) bool { return Hidden(a, e) }), err
}

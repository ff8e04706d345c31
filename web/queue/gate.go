// Package queue is the waiting room at the HTTP edge
// (docs/waiting-room.md): the gate in front of the seat map, the hold
// routes and the live socket, which lets through staff and visitors with
// a valid admission and sends everyone else to the line; and the
// visitor's standing in line that the queue API and page answer. The
// line itself is internal/waitroom's.
package queue

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/waitroom"
	"seatd/web/httpx"
	"seatd/web/session"
)

// Settings reads an event's settings from the hold core's cache (no
// Postgres round trip per request); *hold.Events satisfies it.
type Settings interface {
	Settings(ctx context.Context, a hold.Actor, event uuid.UUID) (store.Event, error)
}

// Line is the waiting line; *waitroom.Line satisfies it.
type Line interface {
	Join(ctx context.Context, room waitroom.Room, visitor string) (waitroom.Place, error)
	Place(ctx context.Context, room waitroom.Room, visitor string) (waitroom.Place, error)
}

// Sessions names the request's session; *session.Sessions satisfies it.
type Sessions interface {
	StoredToken(ctx context.Context) string
}

// Gate decides who may reach an event's seat map while its waiting room
// is on. It needs no Redis: the room's settings come from the hold core's
// cache and an admission is checked with the server secret, so with
// Redis down the admitted keep choosing and nobody new gets through
// (the room fails closed).
type Gate struct {
	settings Settings
	line     Line
	passes   *waitroom.Passes
	sessions Sessions
	secure   bool
}

// New returns the gate; secure marks the admission cookie Secure
// (SEATD_COOKIE_SECURE).
func New(settings Settings, line Line, passes *waitroom.Passes, sessions Sessions, secure bool) *Gate {
	return &Gate{settings: settings, line: line, passes: passes, sessions: sessions, secure: secure}
}

// RetryAfter is what a refused request is told to wait before asking
// again, in seconds: the queue answers say when to look again more
// precisely.
const RetryAfter = 10

// inQueue is the refusal of a visitor without an admission: 429 in_queue
// with Retry-After.
type inQueue struct{ err *apperr.Error }

func (e inQueue) Error() string   { return e.err.Error() }
func (e inQueue) Unwrap() error   { return e.err }
func (e inQueue) RetryAfter() int { return RetryAfter }

func errInQueue(event uuid.UUID) error {
	return inQueue{apperr.E(apperr.InQueue, "this event's waiting room is on: join the line (POST /api/v1/events/%s/queue) "+
		"and come back once admitted", event)}
}

// room is the event's waiting room when it stands between a in front of
// the map: nil when it is off, not open for sale, or a is staff (staff,
// and API keys of staff roles, pass). An event a may not see is its
// error, as the routes answer it.
func (g *Gate) room(ctx context.Context, a hold.Actor, event uuid.UUID) (*waitroom.Room, error) {
	e, err := g.settings.Settings(ctx, a, event)
	if err != nil {
		return nil, err
	}
	w := e.WaitingRoom
	if a.Staff() || !w.Enabled || w.OpensAt == nil || e.Status != store.EventOnSale {
		return nil, nil
	}
	return &waitroom.Room{Org: a.Org, Event: event, OpensAt: *w.OpensAt, RatePerMinute: w.RatePerMinute}, nil
}

// sessionOf is what an admission is bound to: the session (its stored
// token, never the token itself), or the API key a request came with.
func (g *Gate) sessionOf(r *http.Request) string {
	if k, ok := session.APIKeyFrom(r.Context()); ok {
		return "key:" + k.ID.String()
	}
	return g.sessions.StoredToken(r.Context())
}

// visitorOf is the one place in line of a: its account, so every tab
// and every session of it hold one place.
func visitorOf(a hold.Actor) string { return a.User.String() }

func cookieName(event uuid.UUID) string { return "seatd_queue_" + event.String() }

// admitted says whether the request carries a valid admission to event,
// renewing it (a new cookie) in the second half of its life: an active
// visitor keeps theirs, an idle one's lapses.
func (g *Gate) admitted(w http.ResponseWriter, r *http.Request, org, event uuid.UUID) bool {
	c, err := r.Cookie(cookieName(event))
	if err != nil {
		return false
	}
	sess := g.sessionOf(r)
	exp, ok := g.passes.Check(c.Value, org, event, sess)
	if !ok {
		return false
	}
	if g.passes.Stale(exp) {
		g.admit(w, org, event, sess)
	}
	return true
}

// admit sets a fresh admission cookie.
func (g *Gate) admit(w http.ResponseWriter, org, event uuid.UUID, sess string) {
	pass, exp := g.passes.Issue(org, event, sess)
	// #nosec G124 -- Secure follows SEATD_COOKIE_SECURE, as the session cookie's does (off for plain-HTTP development)
	http.SetCookie(w, &http.Cookie{Name: cookieName(event), Value: pass, Path: "/", Expires: exp,
		MaxAge: int(time.Until(exp).Seconds()), HttpOnly: true, Secure: g.secure, SameSite: http.SameSiteLaxMode})
}

// check lets the request through (nil), or says it must queue
// (errInQueue), or fails as the route would for an unknown event.
func (g *Gate) check(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	room, err := g.room(r.Context(), a, event)
	if err != nil || room == nil || g.admitted(w, r, a.Org, event) {
		return err
	}
	return errInQueue(event)
}

// Page guards a page of the map: without an admission, 303 to the line.
func (g *Gate) Page(h session.Handler) session.Handler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		err := g.check(w, r, a)
		if _, queued := err.(inQueue); queued {
			http.Redirect(w, r, "/e/"+r.PathValue("event")+"/queue", http.StatusSeeOther)
			return nil
		}
		if err != nil {
			return err
		}
		return h(w, r, a)
	}
}

// API guards a hold route, a fragment of the map or the live socket:
// without an admission, 429 in_queue with Retry-After. A map whose
// admission lapsed is told (htmx's HX-Redirect) to go to the line.
func (g *Gate) API(h session.Handler) session.Handler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		err := g.check(w, r, a)
		if _, queued := err.(inQueue); queued && r.Header.Get("HX-Request") == "true" {
			w.Header().Set("HX-Redirect", "/e/"+r.PathValue("event")+"/queue")
		}
		if err != nil {
			return err
		}
		return h(w, r, a)
	}
}

// Status is a visitor's standing as the queue answers it.
type Status struct {
	waitroom.Place
	// On is false when the event has no waiting room in front of a: the
	// map is open (Place is then Admitted).
	On bool
	// PollAfter is when the page should ask again: a tenth of the wait,
	// within [5 s, 30 s], spread at random by ±20 % so the pollers of a
	// big line do not arrive together.
	PollAfter time.Duration
}

// Stand joins a to event's line (join) or reads its place, and gives an
// admitted visitor its admission cookie. With Redis down it fails with
// Unavailable: nobody is let in, and the place is kept.
func (g *Gate) Stand(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, join bool) (Status, error) {
	room, err := g.room(r.Context(), a, event)
	if err != nil {
		return Status{}, err
	}
	if room == nil || g.admitted(w, r, a.Org, event) {
		return Status{On: room != nil, Place: waitroom.Place{State: waitroom.Admitted}}, nil
	}
	var p waitroom.Place
	if join {
		p, err = g.line.Join(r.Context(), *room, visitorOf(a))
	} else {
		p, err = g.line.Place(r.Context(), *room, visitorOf(a))
	}
	if err != nil {
		return Status{}, &unavailable{apperr.E(apperr.Unavailable, "the waiting room cannot reach its line right now: "+
			"nobody is let in until it can, and your place is kept; keep this page open"), err}
	}
	if p.State == waitroom.Admitted {
		g.admit(w, a.Org, event, g.sessionOf(r))
	}
	return Status{On: true, Place: p, PollAfter: pollAfter(p)}, nil
}

func pollAfter(p waitroom.Place) time.Duration {
	d := 5 * time.Second
	if p.ETA > 0 {
		d = min(max(p.ETA/10, 5*time.Second), 30*time.Second)
	}
	if p.State == waitroom.BeforeOpening && p.ETA > 0 {
		d = min(p.ETA+time.Second, 30*time.Second)
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64())) // #nosec G404 -- spread, not a secret
}

// unavailable is Redis down, shown with the domain sentence and logged
// with its cause.
type unavailable struct {
	err   *apperr.Error
	cause error
}

func (e *unavailable) Error() string   { return e.err.Error() + ": " + e.cause.Error() }
func (e *unavailable) Unwrap() error   { return e.err }
func (e *unavailable) RetryAfter() int { return RetryAfter }

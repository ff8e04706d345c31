package pages

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/waitroom"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/queue"
	"seatd/web/render"
)

// QueueLine is what the waiting-room page asks of the waiting room;
// *queue.Gate satisfies it.
type QueueLine interface {
	Stand(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, join bool) (queue.Status, error)
}

// Queue is an event's waiting-room page (docs/waiting-room.md).
type Queue struct {
	render  Renderer
	visible VisibleEvents
	line    QueueLine
}

// Page joins the visitor to the line (or finds their place) and shows
// it; an admitted visitor, or one of an event without a waiting room,
// goes to the map. With the line unreachable the page says so (503) and
// keeps asking.
func (p *Queue) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	ev, err := p.visible.Event(r.Context(), a, event)
	if err != nil {
		return err
	}
	q := views.Queue{EventID: event.String(), EventName: ev.Name, State: string(waitroom.NotInLine), PollAfter: queue.RetryAfter}
	status := http.StatusOK
	st, err := p.line.Stand(w, r, a, event, true)
	switch {
	case err == nil && st.State == waitroom.Admitted:
		http.Redirect(w, r, "/e/"+event.String(), http.StatusSeeOther) // #nosec G710 -- a parsed UUID
		return nil
	case errors.Is(err, apperr.E(apperr.Unavailable, "")):
		q.Paused, status = httpx.Message(err), http.StatusServiceUnavailable
	case err != nil:
		return err
	default:
		q.State, q.Position, q.Ahead, q.InLine = string(st.State), st.Position, st.Ahead, st.InLine
		q.PollAfter = max(1, int(st.PollAfter/time.Second))
		if st.ETA >= 0 {
			q.ETA = waitWords(st.ETA)
		}
		if !st.OpensAt.IsZero() {
			q.OpensAt = st.OpensAt.In(render.VenueTime(ev)).Format("Mon 2 Jan 15:04 MST")
		}
	}
	p.render.Render(w, r, status, views.QueuePage(p.render.Meta(r, ev.Name+" · waiting room"), q))
	return nil
}

// waitWords is a wait as the page says it (static/js/queue.js says it
// the same way).
func waitWords(d time.Duration) string {
	m := int((d + 30*time.Second) / time.Minute)
	switch {
	case d < time.Minute:
		return "less than a minute"
	case m == 1:
		return "about 1 minute"
	case m < 60:
		return "about " + strconv.Itoa(m) + " minutes"
	}
	return "about " + strconv.Itoa(m/60) + " h " + strconv.Itoa(m%60) + " min"
}

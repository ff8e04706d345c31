package staff

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/waitroom"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// QueueStats reads a waiting line's figures; *waitroom.Line satisfies it.
type QueueStats interface {
	Stats(ctx context.Context, room waitroom.Room) (waitroom.Stats, error)
}

// RoomSettings reads and changes an event's settings; *hold.Events
// satisfies it.
type RoomSettings interface {
	Settings(ctx context.Context, a hold.Actor, event uuid.UUID) (store.Event, error)
	Update(ctx context.Context, a hold.Actor, id uuid.UUID, in hold.EventInput) (store.Event, error)
}

// Queue is the waiting-room panel of an event's dashboard: the line's
// figures and the rate control (docs/waiting-room.md).
type Queue struct {
	render Renderer
	stats  QueueStats
	events RoomSettings
}

// Panel renders the panel.
func (p *Queue) Panel(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return p.show(w, r, a, event, "")
}

// SetRate sets the room's rate from the panel's form: visitors a minute,
// or "auto"; a refused value is shown in the panel and changes nothing.
func (p *Queue) SetRate(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return err
	}
	rate := r.PostForm.Get("rate_per_minute")
	_, err = p.events.Update(r.Context(), a, event, hold.EventInput{WaitingRoom: &hold.WaitingRoomInput{RatePerMinute: &rate}})
	if e, ok := httpx.DomainError(err); ok && e.Fields["waiting_room.rate_per_minute"] != "" {
		return p.show(w, r, a, event, "The rate "+e.Fields["waiting_room.rate_per_minute"]+".")
	}
	if err != nil {
		return err
	}
	return p.show(w, r, a, event, "")
}

func (p *Queue) show(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, problem string) error {
	ev, err := p.events.Settings(r.Context(), a, event)
	if err != nil {
		return err
	}
	wr := ev.WaitingRoom
	q := views.QueuePanel{EventID: event.String(), On: wr.Enabled && wr.OpensAt != nil, Error: problem, RateInput: "auto"}
	if wr.RatePerMinute > 0 {
		q.RateInput = strconv.Itoa(wr.RatePerMinute)
	}
	if q.On {
		q.OpensAt = wr.OpensAt.In(render.VenueTime(ev)).Format("Mon 2 Jan 15:04 MST")
		st, err := p.stats.Stats(r.Context(), waitroom.Room{Org: a.Org, Event: event, OpensAt: *wr.OpensAt, RatePerMinute: wr.RatePerMinute})
		if err != nil {
			// Redis down: the room admits nobody until it is back.
			q.Error = "The line cannot be reached: nobody is being let in until it can; visitors keep their places."
		}
		q.Waiting, q.AdmittedPerMinute, q.Admitted = st.Waiting, st.AdmittedPerMinute, st.Admitted
		q.Rate = strconv.FormatFloat(st.Rate, 'f', 0, 64)
		if wr.RatePerMinute == 0 {
			q.Rate = "auto (now " + q.Rate + ")"
		}
		if st.ClearIn >= 0 && err == nil {
			q.ClearIn = st.ClearIn.Round(time.Second).String()
		}
	}
	p.render.Render(w, r, http.StatusOK, views.QueuePanelView(q))
	return nil
}

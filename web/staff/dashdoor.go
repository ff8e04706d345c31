package staff

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/render"
)

// DoorFigures reads an event's figures at the door; *door.Door satisfies
// it.
type DoorFigures interface {
	Counts(ctx context.Context, a hold.Actor, event uuid.UUID) (door.Counts, error)
}

// doorFigures is the dashboard's door panel of an event.
func (p *Dashboard) doorFigures(ctx context.Context, a hold.Actor, event uuid.UUID) (views.DoorFigures, error) {
	c, err := p.door.Counts(ctx, a, event)
	if err != nil {
		return views.DoorFigures{}, err
	}
	f := views.DoorFigures{EventID: event.String(), Admitted: c.Admitted, Expected: c.Expected,
		Entrances: make([]views.EntranceCount, len(c.Entrances))}
	for i, e := range c.Entrances {
		f.Entrances[i] = views.EntranceCount{Name: e.Name, Admitted: e.Admitted}
	}
	return f, nil
}

// Door is the dashboard's door panel alone: what the page fetches again
// when its socket (re)opens.
func (p *Dashboard) Door(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	f, err := p.doorFigures(r.Context(), a, ev.ID)
	if err != nil {
		return err
	}
	p.page(w, r, ev, views.DoorPanel(f, false))
	return nil
}

// RenderDoor renders the door panel the hub sends an event's dashboards
// after admissions, out of band (live.DoorRenderer). The hub checked the
// event is org's, so the renderer acts as that organization's staff.
func (p *Pages) RenderDoor(ctx context.Context, org, event uuid.UUID) ([]byte, error) {
	f, err := p.Dashboard.doorFigures(ctx, hold.Actor{Org: org, Role: hold.RoleOrganizer}, event)
	if err != nil {
		return nil, err
	}
	return render.Bytes(ctx, views.DoorPanel(f, true))
}

package pages

import (
	"net/http"

	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/render"
)

// Events is the list of the organization's events.
type Events struct {
	render  Renderer
	visible VisibleEvents
}

// List shows the events the actor may see.
func (p *Events) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	evs, err := p.visible.List(r.Context(), a)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.Events(p.render.Meta(r, "Events"), render.Events(evs)))
	return nil
}

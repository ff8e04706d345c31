package staff

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// ChartStore lists and deletes charts; *store.Charts satisfies it.
type ChartStore interface {
	ChartReads
	Delete(ctx context.Context, org, id uuid.UUID) error
}

// Charts is the organizer's charts list and the chart editor's pages (the
// editor saves through the JSON API).
type Charts struct {
	*frame
	store ChartStore
}

// List lists the organization's charts.
func (p *Charts) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	vs, err := p.store.List(r.Context(), a.Org)
	if err != nil {
		return err
	}
	out := make([]views.ChartRow, len(vs))
	for i, v := range vs {
		out[i] = views.ChartRow{ID: v.ChartID.String(), Name: v.Name, Version: v.Version, Seats: v.Seats, Sections: v.Sections, UpdatedAt: v.CreatedAt}
	}
	p.render.Render(w, r, http.StatusOK, views.ChartsPage(p.render.Meta(r, "Charts"), out))
	return nil
}

// New is the editor for a new chart.
func (p *Charts) New(w http.ResponseWriter, r *http.Request, _ hold.Actor) error {
	p.render.Render(w, r, http.StatusOK, views.ChartEditorPage(p.render.Meta(r, "New chart"), ""))
	return nil
}

// Edit is the editor of an existing chart; the page script loads the
// chart from the API.
func (p *Charts) Edit(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	v, err := p.store.LatestVersion(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.ChartEditorPage(p.render.Meta(r, v.Name), id.String()))
	return nil
}

// Delete is the charts page's Delete: a chart in use stays, and the page
// says why.
func (p *Charts) Delete(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	return p.flashAndReturn(w, r, p.store.Delete(r.Context(), a.Org, id), "Chart deleted.", "/admin/charts")
}

var _ ChartStore = (*store.Charts)(nil)

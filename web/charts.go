package web

import (
	"net/http"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/httpx"
)

// deleteChartForm is the charts page's Delete: a chart in use stays, and
// the page says why.
func (s *Server) deleteChartForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	return s.flashAndReturn(w, r, s.deps.Store.Charts.Delete(r.Context(), a.Org, id), "Chart deleted.", "/admin/charts")
}

// flashAndReturn ends a form post whose refusal is the user's to read: a
// conflict's message, or ok when err is nil, goes in the flash and the
// browser goes back to page; any other error is the error page's.
func (s *Server) flashAndReturn(w http.ResponseWriter, r *http.Request, err error, ok, page string) error {
	switch {
	case apperr.CodeOf(err) == apperr.Conflict:
		s.sessions.Flash(r.Context(), httpx.Message(err))
	case err != nil:
		return err
	default:
		s.sessions.Flash(r.Context(), ok)
	}
	http.Redirect(w, r, page, http.StatusSeeOther)
	return nil
}

// chartsPage lists the organization's charts.
func (s *Server) chartsPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	vs, err := s.deps.Store.Charts.List(r.Context(), a.Org)
	if err != nil {
		return err
	}
	out := make([]views.ChartRow, len(vs))
	for i, v := range vs {
		out[i] = views.ChartRow{ID: v.ChartID.String(), Name: v.Name, Version: v.Version, Seats: v.Seats, Sections: v.Sections, UpdatedAt: v.CreatedAt}
	}
	s.render.Render(w, r, http.StatusOK, views.ChartsPage(s.render.Meta(r, "Charts"), out))
	return nil
}

// newChartPage is the editor for a new chart.
func (s *Server) newChartPage(w http.ResponseWriter, r *http.Request, _ hold.Actor) error {
	s.render.Render(w, r, http.StatusOK, views.ChartEditorPage(s.render.Meta(r, "New chart"), ""))
	return nil
}

// chartPage is the editor of an existing chart; the page script loads the
// chart from the API.
func (s *Server) chartPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	v, err := s.deps.Store.Charts.LatestVersion(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	s.render.Render(w, r, http.StatusOK, views.ChartEditorPage(s.render.Meta(r, v.Name), id.String()))
	return nil
}

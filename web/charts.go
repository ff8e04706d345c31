package web

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// maxChartBody bounds a chart upload: a 200 000-seat chart (chart.MaxSeats)
// as indented JSON is about 20 MB; CSV is a third of that.
const maxChartBody = 32 << 20

const mediaCSV = "text/csv"

// chartSaved is the answer to a chart saved.
type chartSaved struct {
	ID        uuid.UUID `json:"id"`
	Version   int       `json:"version"`
	VersionID uuid.UUID `json:"version_id"`
	Name      string    `json:"name"`
	Sections  int       `json:"sections"`
	Seats     int       `json:"seats"`
	UpdatedAt time.Time `json:"updated_at"`
}

func chartView(v store.ChartVersion) chartSaved {
	return chartSaved{ID: v.ChartID, Version: v.Version, VersionID: v.ID, Name: v.Name, Sections: v.Sections,
		Seats: v.Seats, UpdatedAt: v.CreatedAt.UTC()}
}

// readChart reads a chart sent as JSON or CSV and validates it; known
// are the categories of the version it replaces (a CSV keeps their names
// and colours). after is the version a JSON edit says it was made from
// (0: none said).
func readChart(w http.ResponseWriter, r *http.Request, chartID uuid.UUID, prevName string, known []chart.Category) (c chart.Chart, after int, err error) {
	mt := httpx.MediaType(r)
	if mt != httpx.MediaJSON && mt != mediaCSV {
		return c, 0, httpx.UnsupportedMedia(httpx.MediaJSON + " or " + mediaCSV)
	}
	b, err := httpx.ReadBodyUpTo(w, r, maxChartBody)
	if err != nil {
		return c, 0, err
	}
	if mt == mediaCSV {
		name := r.URL.Query().Get("name")
		if name == "" {
			name = prevName
		}
		c, err = chart.ParseCSV(bytes.NewReader(b), name, known)
		return c, 0, err
	}
	d, err := chart.DecodeJSON(b)
	if err != nil {
		return c, 0, err
	}
	if d.ID != nil && chartID != uuid.Nil && *d.ID != chartID {
		// A copy of another chart sent to this one is most likely a
		// mistake; POST (chartID nil) makes a new chart of any copy.
		return c, 0, &apperr.Error{Code: apperr.Invalid, Message: "the chart sent is another chart",
			Fields: map[string]string{"id": "is not the id of the chart being edited"}}
	}
	if d.Version < 0 {
		return c, 0, &apperr.Error{Code: apperr.Invalid, Message: "the version is not valid",
			Fields: map[string]string{"version": "must be a positive whole number"}}
	}
	return d.Chart, d.Version, chart.Validate(d.Chart)
}

// createChart stores a new chart (its version 1).
func (s *Server) createChart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	c, _, err := readChart(w, r, uuid.Nil, "", nil)
	if err != nil {
		return err
	}
	v, err := s.deps.Store.Charts.Save(r.Context(), a.Org, uuid.Nil, c)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/charts/"+v.ChartID.String())
	httpx.WriteJSON(w, http.StatusCreated, chartView(v))
	return nil
}

// updateChart stores a new version of a chart; earlier versions, and the
// events made from them, stay as they were. A JSON body carrying the
// version it was read as (what GET answers) is refused with 409 if the
// chart was saved again since: two editors do not silently overwrite
// each other.
func (s *Server) updateChart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	prev, err := s.deps.Store.Charts.LatestVersion(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	c, after, err := readChart(w, r, id, prev.Layout.Name, prev.Layout.Categories)
	if err != nil {
		return err
	}
	v, err := s.deps.Store.Charts.SaveAfter(r.Context(), a.Org, id, after, c)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, chartView(v))
	return nil
}

func (s *Server) deleteChart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	if err := s.deps.Store.Charts.Delete(r.Context(), a.Org, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

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

func (s *Server) listCharts(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "charts", chartView)(s.deps.Store.Charts.List(r.Context(), a.Org))
}

// chartVersion reads the newest version of the chart in the path, or the
// one ?version= names.
func (s *Server) chartVersion(r *http.Request, a hold.Actor) (store.ChartVersion, error) {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return store.ChartVersion{}, err
	}
	q := r.URL.Query().Get("version")
	if q == "" {
		return s.deps.Store.Charts.LatestVersion(r.Context(), a.Org, id)
	}
	n, err := strconv.Atoi(q)
	if err != nil || n <= 0 {
		return store.ChartVersion{}, &apperr.Error{Code: apperr.Invalid, Message: "the version is not valid",
			Fields: map[string]string{"version": "must be a positive whole number"}}
	}
	return s.deps.Store.Charts.VersionNumber(r.Context(), a.Org, id, n)
}

// getChart answers one version of a chart in the form POST and PUT take.
func (s *Server) getChart(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	v, err := s.chartVersion(r, a)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, chartDocument(v))
	return nil
}

func chartDocument(v store.ChartVersion) chart.Document {
	d := chart.Document{ID: &v.ChartID, Version: v.Version, Chart: v.Layout}
	if d.Categories == nil {
		d.Categories = []chart.Category{} // a list, as the editor and clients expect
	}
	return d
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
	s.pages.Render(w, r, http.StatusOK, views.ChartsPage(s.pages.Meta(r, "Charts"), out))
	return nil
}

// newChartPage is the editor for a new chart.
func (s *Server) newChartPage(w http.ResponseWriter, r *http.Request, _ hold.Actor) error {
	s.pages.Render(w, r, http.StatusOK, views.ChartEditorPage(s.pages.Meta(r, "New chart"), ""))
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
	s.pages.Render(w, r, http.StatusOK, views.ChartEditorPage(s.pages.Meta(r, v.Name), id.String()))
	return nil
}

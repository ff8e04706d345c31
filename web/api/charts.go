package api

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/gate"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// maxChartBody bounds a chart upload: a 200 000-seat chart (chart.MaxSeats)
// as indented JSON is about 20 MB; CSV is a third of that.
const maxChartBody = 32 << 20

const mediaCSV = "text/csv"

// ChartStore keeps venue charts and their versions; *store.Charts
// satisfies it.
type ChartStore interface {
	Save(ctx context.Context, org, chartID uuid.UUID, c chart.Chart) (store.ChartVersion, error)
	SaveAfter(ctx context.Context, org, chartID uuid.UUID, after int, c chart.Chart) (store.ChartVersion, error)
	LatestVersion(ctx context.Context, org, chartID uuid.UUID) (store.ChartVersion, error)
	VersionNumber(ctx context.Context, org, chartID uuid.UUID, n int) (store.ChartVersion, error)
	List(ctx context.Context, org uuid.UUID) ([]store.ChartVersion, error)
	Delete(ctx context.Context, org, id uuid.UUID) error
}

// Charts keeps the organizer's venue charts
// (docs/architecture.md#charts-and-events): every save is a new version;
// events keep the version they were made from.
type Charts struct {
	store ChartStore
	// uploads bounds the chart bodies read and decoded at once in this
	// process (up to maxChartBody each): a burst of them waits briefly,
	// then is answered 503 with Retry-After, and holds keep their memory
	// and CPU.
	uploads *gate.Gate
}

// ChartJSON is the answer to a chart saved, and a chart listed.
type ChartJSON struct {
	ID        uuid.UUID `json:"id"`
	Version   int       `json:"version"`
	VersionID uuid.UUID `json:"version_id"`
	Name      string    `json:"name"`
	Sections  int       `json:"sections"`
	Seats     int       `json:"seats"`
	UpdatedAt time.Time `json:"updated_at"`
}

func chartView(v store.ChartVersion) ChartJSON {
	return ChartJSON{ID: v.ChartID, Version: v.Version, VersionID: v.ID, Name: v.Name, Sections: v.Sections,
		Seats: v.Seats, UpdatedAt: v.CreatedAt.UTC()}
}

// readChart reads a chart sent as JSON or CSV and validates it, inside
// the uploads gate; known are the categories of the version it replaces
// (a CSV keeps their names and colours). after is the version a JSON edit
// says it was made from (0: none said).
func (h *Charts) readChart(w http.ResponseWriter, r *http.Request, chartID uuid.UUID, prevName string, known []chart.Category) (c chart.Chart, after int, err error) {
	mt := httpx.MediaType(r)
	if mt != httpx.MediaJSON && mt != mediaCSV {
		return c, 0, httpx.UnsupportedMedia(httpx.MediaJSON + " or " + mediaCSV)
	}
	leave, err := h.uploads.Enter(r.Context())
	if err != nil {
		return c, 0, err
	}
	defer leave()
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

// Create stores a new chart (its version 1).
func (h *Charts) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	c, _, err := h.readChart(w, r, uuid.Nil, "", nil)
	if err != nil {
		return err
	}
	v, err := h.store.Save(r.Context(), a.Org, uuid.Nil, c)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/charts/"+v.ChartID.String())
	httpx.WriteJSON(w, http.StatusCreated, chartView(v))
	return nil
}

// Update stores a new version of a chart; earlier versions, and the
// events made from them, stay as they were. A JSON body carrying the
// version it was read as (what GET answers) is refused with 409 if the
// chart was saved again since: two editors do not silently overwrite
// each other.
func (h *Charts) Update(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	prev, err := h.store.LatestVersion(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	c, after, err := h.readChart(w, r, id, prev.Layout.Name, prev.Layout.Categories)
	if err != nil {
		return err
	}
	v, err := h.store.SaveAfter(r.Context(), a.Org, id, after, c)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, chartView(v))
	return nil
}

// Delete deletes a chart no event uses (204; 409 otherwise).
func (h *Charts) Delete(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	if err := h.store.Delete(r.Context(), a.Org, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// List answers the organization's charts, each at its newest version.
func (h *Charts) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "charts", chartView)(h.store.List(r.Context(), a.Org))
}

// Get answers one version of a chart in the form POST and PUT take: the
// newest, or the one ?version= names.
func (h *Charts) Get(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "chart")
	if err != nil {
		return err
	}
	var v store.ChartVersion
	if q := r.URL.Query().Get("version"); q == "" {
		v, err = h.store.LatestVersion(r.Context(), a.Org, id)
	} else if n, perr := strconv.Atoi(q); perr != nil || n <= 0 {
		return &apperr.Error{Code: apperr.Invalid, Message: "the version is not valid",
			Fields: map[string]string{"version": "must be a positive whole number"}}
	} else {
		v, err = h.store.VersionNumber(r.Context(), a.Org, id, n)
	}
	if err != nil {
		return err
	}
	d := chart.Document{ID: &v.ChartID, Version: v.Version, Chart: v.Layout}
	if d.Categories == nil {
		d.Categories = []chart.Category{} // a list, as the editor and clients expect
	}
	httpx.WriteJSON(w, http.StatusOK, d)
	return nil
}

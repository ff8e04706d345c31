package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/chart"
	"seatd/internal/testenv"
	"seatd/web/api"
)

// testChart is a small valid chart: two seated sections with categories
// and flags, and a GA area.
func testChart() chart.Chart {
	row := func(label string, y, n int, cat string) chart.Row {
		r := chart.Row{Label: label}
		for i := 1; i <= n; i++ {
			r.Seats = append(r.Seats, chart.Seat{Number: i, X: i, Y: y, Category: cat})
		}
		return r
	}
	c := chart.Chart{
		Name: "Town hall",
		Categories: []chart.Category{
			{Key: "stalls", Name: "Stalls", Color: "#4f46e5"},
			{Key: "balcony", Name: "Balcony", Color: "#059669"},
		},
		Sections: []chart.Section{
			{Label: "A", Name: "Stalls", Kind: chart.Seated, Rows: []chart.Row{row("1", 0, 6, "stalls"), row("2", 1, 6, "stalls")}},
			{Label: "B", Name: "Balcony", Kind: chart.Seated, Rows: []chart.Row{row("1", 4, 4, "balcony")}},
			{Label: "Floor", Name: "Standing", Kind: chart.GA, Capacity: 300, Category: "stalls"},
		},
	}
	c.Sections[0].Rows[0].Seats[0].Accessible = true
	c.Sections[0].Rows[0].Seats[1].Companion = true
	return c
}

// chartRows counts an org's charts and chart versions.
func chartRows(t testing.TB, a *app.App, org uuid.UUID) string {
	t.Helper()
	var c, v int
	err := a.Pool.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM charts WHERE org_id = $1), (SELECT count(*) FROM chart_versions WHERE org_id = $1)`,
		org).Scan(&c, &v)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d charts, %d versions", c, v)
}

func TestChartRoundTrip(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ten := testenv.NewTenant(t, s.app, 0)
	org := s.as(ten.Org, ten.Organizer)

	c := testChart()
	// A big hall, so the body is far past the 16 KiB other routes take.
	big := chart.Section{Label: "C", Name: "Circle", Kind: chart.Seated}
	for r := range 40 {
		row := chart.Row{Label: fmt.Sprintf("R%d", r+1)}
		for n := range 50 {
			row.Seats = append(row.Seats, chart.Seat{Number: n + 1, X: n, Y: 10 + r, Category: "balcony"})
		}
		big.Rows = append(big.Rows, row)
	}
	c.Sections = append(c.Sections, big)

	var saved api.ChartJSON
	res := org.do("POST", "/api/v1/charts", c).want(t, http.StatusCreated)
	res.json(t, &saved)
	if saved.Version != 1 || saved.Name != "Town hall" || saved.Sections != 4 || saved.Seats != 16+2000 {
		t.Fatalf("saved %+v", saved)
	}
	if res.header.Get("Location") != "/api/v1/charts/"+saved.ID.String() {
		t.Fatalf("location %q", res.header.Get("Location"))
	}

	got := org.do("GET", "/api/v1/charts/"+saved.ID.String(), nil).want(t, http.StatusOK)
	var doc chart.Document
	got.json(t, &doc)
	if doc.ID == nil || *doc.ID != saved.ID || doc.Version != 1 || !reflect.DeepEqual(doc.Chart, c) {
		t.Fatalf("GET answered another chart: id %v version %d", doc.ID, doc.Version)
	}

	// What GET answered, sent back byte for byte, is a new chart with the
	// same layout (POST) or the chart's next version (PUT).
	var again api.ChartJSON
	org.do("POST", "/api/v1/charts", raw{"application/json", got.body}).want(t, http.StatusCreated).json(t, &again)
	if again.ID == saved.ID {
		t.Fatal("POST of a GET body reused the chart")
	}
	var doc2 chart.Document
	org.do("GET", "/api/v1/charts/"+again.ID.String(), nil).want(t, http.StatusOK).json(t, &doc2)
	if !reflect.DeepEqual(doc2.Chart, doc.Chart) {
		t.Fatal("the layout changed on the round trip")
	}
	var v2 api.ChartJSON
	org.do("PUT", "/api/v1/charts/"+saved.ID.String(), raw{"application/json", got.body}).want(t, http.StatusOK).json(t, &v2)
	if v2.ID != saved.ID || v2.Version != 2 || v2.VersionID == saved.VersionID {
		t.Fatalf("PUT answered %+v", v2)
	}

	var list struct{ Charts []api.ChartJSON }
	org.do("GET", "/api/v1/charts", nil).want(t, http.StatusOK).json(t, &list)
	if len(list.Charts) != 2 {
		t.Fatalf("list: %+v", list.Charts)
	}
	for _, l := range list.Charts {
		if l.ID == saved.ID && l.Version != 2 {
			t.Fatalf("list shows version %d of the edited chart", l.Version)
		}
	}
}

// TestChartVersions: a new version leaves the earlier one readable and
// unchanged.
func TestChartVersions(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ten := testenv.NewTenant(t, s.app, 0)
	org := s.as(ten.Org, ten.Organizer)

	c := testChart()
	var saved api.ChartJSON
	org.do("POST", "/api/v1/charts", c).want(t, http.StatusCreated).json(t, &saved)
	path := "/api/v1/charts/" + saved.ID.String()

	c2 := testChart()
	c2.Name = "Town hall (new balcony)"
	c2.Sections[1].Rows[0].Seats = c2.Sections[1].Rows[0].Seats[:2]
	c2.Categories[1].Color = "#000000"
	var v2 api.ChartJSON
	org.do("PUT", path, c2).want(t, http.StatusOK).json(t, &v2)
	if v2.Version != 2 || v2.Seats != 14 || v2.Name != c2.Name {
		t.Fatalf("v2 %+v", v2)
	}

	var old, cur chart.Document
	org.do("GET", path+"?version=1", nil).want(t, http.StatusOK).json(t, &old)
	org.do("GET", path, nil).want(t, http.StatusOK).json(t, &cur)
	if old.Version != 1 || !reflect.DeepEqual(old.Chart, c) {
		t.Fatalf("version 1 changed: %+v", old)
	}
	if cur.Version != 2 || !reflect.DeepEqual(cur.Chart, c2) {
		t.Fatalf("version 2: %+v", cur)
	}
	org.do("GET", path+"?version=3", nil).wantErr(t, http.StatusNotFound, "not_found")
	e := org.do("GET", path+"?version=zero", nil).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	if e.Fields["version"] == "" {
		t.Fatalf("fields %v", e.Fields)
	}
	// An edit of version 1 made after version 2 was saved is refused, not
	// applied over it.
	stale := old
	stale.Name = "stale edit"
	org.do("PUT", path, stale).wantErr(t, http.StatusConflict, "conflict")
	// A refused edit makes no version.
	org.do("PUT", path, chart.Chart{Name: "x"}).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	if got := chartRows(t, s.app, ten.Org.ID); got != "1 charts, 2 versions" {
		t.Fatal(got)
	}

	// Concurrent edits each get their own next version, none lost.
	const edits = 8
	versions := make(chan int, edits)
	var wg sync.WaitGroup
	for i := range edits {
		wg.Go(func() {
			c := testChart()
			c.Name = fmt.Sprintf("edit %d", i)
			var v api.ChartJSON
			if r := org.do("PUT", path, c); r.status == http.StatusOK {
				r.json(t, &v)
				versions <- v.Version
			} else {
				t.Errorf("concurrent PUT: %d %s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	close(versions)
	seen := map[int]bool{}
	for v := range versions {
		seen[v] = true
	}
	for v := 3; v < 3+edits; v++ {
		if !seen[v] {
			t.Errorf("versions %v: %d missing", seen, v)
		}
	}
	org.do("GET", path+"?version=1", nil).want(t, http.StatusOK).json(t, &old)
	if !reflect.DeepEqual(old.Chart, c) {
		t.Fatal("version 1 changed after concurrent edits")
	}
}

// TestChartMalformed: each broken chart is refused with 422, names every
// problem by its JSON path, and writes nothing.
func TestChartMalformed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ten := testenv.NewTenant(t, s.app, 0)
	org := s.as(ten.Org, ten.Organizer)
	var existing api.ChartJSON
	org.do("POST", "/api/v1/charts", testChart()).want(t, http.StatusCreated).json(t, &existing)

	edit := func(f func(c *chart.Chart)) any {
		c := testChart()
		f(&c)
		return c
	}
	seat := func(c *chart.Chart, s, r, n int) *chart.Seat { return &c.Sections[s].Rows[r].Seats[n] }
	cases := []struct {
		name   string
		body   any
		fields []string
	}{
		{"no name", edit(func(c *chart.Chart) { c.Name = "" }), []string{"name"}},
		{"blank name", edit(func(c *chart.Chart) { c.Name = "   " }), []string{"name"}},
		{"name too long", edit(func(c *chart.Chart) { c.Name = strings.Repeat("n", 201) }), []string{"name"}},
		{"control character in a name", edit(func(c *chart.Chart) { c.Sections[0].Name = "a\x00b" }), []string{"sections[0].name"}},
		{"bad category keys", edit(func(c *chart.Chart) {
			c.Categories = append(c.Categories, chart.Category{Key: "VIP!", Name: "VIP", Color: "#ffffff"},
				chart.Category{Key: "", Name: "None", Color: "#ffffff"}, chart.Category{Key: strings.Repeat("k", 33), Name: "Long", Color: "#ffffff"})
		}), []string{"categories[2].key", "categories[3].key", "categories[4].key"}},
		{"duplicate category key", edit(func(c *chart.Chart) {
			c.Categories = append(c.Categories, chart.Category{Key: "stalls", Name: "Stalls again", Color: "#ffffff"})
		}), []string{"categories[2].key"}},
		{"bad colours", edit(func(c *chart.Chart) { c.Categories[0].Color = "red"; c.Categories[1].Color = "#12345g" }), []string{"categories[0].color", "categories[1].color"}},
		{"category without a name", edit(func(c *chart.Chart) { c.Categories[1].Name = "" }), []string{"categories[1].name"}},
		{"no sections", edit(func(c *chart.Chart) { c.Sections = nil }), []string{"sections"}},
		{"duplicate section label", edit(func(c *chart.Chart) { c.Sections[1].Label = "A" }), []string{"sections[1].label"}},
		{"section label too long", edit(func(c *chart.Chart) { c.Sections[0].Label = strings.Repeat("L", 21) }), []string{"sections[0].label"}},
		{"row label too long", edit(func(c *chart.Chart) { c.Sections[0].Rows[1].Label = strings.Repeat("r", 11) }), []string{"sections[0].rows[1].label"}},
		{"bad kind", edit(func(c *chart.Chart) { c.Sections[1].Kind = "boxes" }), []string{"sections[1].kind"}},
		{"GA without capacity", edit(func(c *chart.Chart) { c.Sections[2].Capacity = 0 }), []string{"sections[2].capacity"}},
		{"GA with rows", edit(func(c *chart.Chart) { c.Sections[2].Rows = c.Sections[1].Rows }), []string{"sections[2].rows"}},
		{"seated with capacity", edit(func(c *chart.Chart) { c.Sections[0].Capacity = 10 }), []string{"sections[0].capacity"}},
		{"empty section", edit(func(c *chart.Chart) { c.Sections[1].Rows = nil }), []string{"sections[1].rows"}},
		{"empty row", edit(func(c *chart.Chart) { c.Sections[1].Rows[0].Seats = []chart.Seat{} }), []string{"sections[1].rows[0].seats"}},
		{"duplicate row label", edit(func(c *chart.Chart) { c.Sections[0].Rows[1].Label = "1" }), []string{"sections[0].rows[1].label"}},
		{"seat numbers zero and negative", edit(func(c *chart.Chart) { seat(c, 0, 0, 2).Number = 0; seat(c, 1, 0, 3).Number = -4 }),
			[]string{"sections[0].rows[0].seats[2].number", "sections[1].rows[0].seats[3].number"}},
		{"duplicate seat", edit(func(c *chart.Chart) { seat(c, 0, 1, 5).Number = 2 }), []string{"sections[0].rows[1].seats[5].number"}},
		{"negative coordinates", edit(func(c *chart.Chart) { seat(c, 0, 0, 5).X = -1; seat(c, 0, 1, 0).Y = -3 }),
			[]string{"sections[0].rows[0].seats[5].x", "sections[0].rows[1].seats[0].y"}},
		{"coordinates too far", edit(func(c *chart.Chart) { seat(c, 1, 0, 0).X = chart.MaxCoord + 1 }), []string{"sections[1].rows[0].seats[0].x"}},
		{"overlapping seats", edit(func(c *chart.Chart) { seat(c, 1, 0, 2).X, seat(c, 1, 0, 2).Y = 3, 1 }), []string{"sections[1].rows[0].seats[2]"}},
		{"unknown category", edit(func(c *chart.Chart) { seat(c, 0, 1, 3).Category = "vip" }), []string{"sections[0].rows[1].seats[3].category"}},
		{"seat without category", edit(func(c *chart.Chart) { seat(c, 1, 0, 1).Category = "" }), []string{"sections[1].rows[0].seats[1].category"}},
		{"GA unknown category", edit(func(c *chart.Chart) { c.Sections[2].Category = "pit" }), []string{"sections[2].category"}},
		{"accessible and companion", edit(func(c *chart.Chart) { seat(c, 0, 0, 0).Companion = true }), []string{"sections[0].rows[0].seats[0].companion"}},
		{"companion alone", edit(func(c *chart.Chart) { seat(c, 0, 1, 4).Companion = true }), []string{"sections[0].rows[1].seats[4].companion"}},
		{"many problems at once", edit(func(c *chart.Chart) {
			c.Name = ""
			c.Categories[0].Color = "blue"
			c.Sections[1].Kind = ""
			seat(c, 0, 1, 1).Number = 0
		}), []string{"name", "categories[0].color", "sections[1].kind", "sections[0].rows[1].seats[1].number"}},
		{"wrong types", raw{"application/json", []byte(`{"name": 7, "categories": [{"key": "a", "name": "A", "color": true}],
			"sections": [{"label": "A", "kind": "seated", "rows": [{"label": "1", "seats": [{"number": "1", "x": 1.5, "y": 0}]}]}]}`)},
			[]string{"name", "categories[0].color", "sections[0].rows[0].seats[0].number", "sections[0].rows[0].seats[0].x"}},
		{"unknown fields", raw{"application/json", []byte(`{"name": "x", "colour": 1, "sections": [{"label": "A", "kind": "ga", "capacity": 5, "seats": []}]}`)},
			[]string{"colour", "sections[0].seats"}},
		{"sections not a list", raw{"application/json", []byte(`{"name": "x", "sections": {"label": "A"}}`)}, []string{"sections"}},
		{"bad id", raw{"application/json", []byte(`{"id": "chart-1", "name": "x", "sections": []}`)}, []string{"id"}},
	}
	before := chartRows(t, s.app, ten.Org.ID)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{"POST", "PUT"} {
				path := "/api/v1/charts"
				if method == "PUT" {
					path += "/" + existing.ID.String()
				}
				e := org.do(method, path, tc.body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
				for _, f := range tc.fields {
					if e.Fields[f] == "" {
						t.Errorf("%s: no problem at %s; fields %v", method, f, e.Fields)
					}
				}
				if len(e.Fields) > len(tc.fields)+1 {
					t.Errorf("%s: more problems than expected: %v", method, e.Fields)
				}
			}
		})
	}
	if after := chartRows(t, s.app, ten.Org.ID); after != before {
		t.Fatalf("refused charts wrote rows: %s, then %s", before, after)
	}
	// Not JSON at all is 400, a wrong media type 415; still nothing written.
	org.do("POST", "/api/v1/charts", raw{"application/json", []byte(`{"name": `)}).wantErr(t, http.StatusBadRequest, "bad_request")
	org.do("POST", "/api/v1/charts", raw{"text/plain", []byte(`x`)}).wantErr(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	if after := chartRows(t, s.app, ten.Org.ID); after != before {
		t.Fatalf("refused charts wrote rows: %s, then %s", before, after)
	}
}

func TestChartCSV(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ten := testenv.NewTenant(t, s.app, 0)
	org := s.as(ten.Org, ten.Organizer)
	csv := func(lines ...string) raw { return raw{"text/csv", []byte(strings.Join(lines, "\n") + "\n")} }

	good := csv(chart.CSVHeader,
		"A,1,1,0,0,stalls,accessible",
		"A,1,2,1,0,stalls,companion",
		"A,1,3,2,0,stalls,",
		"A,2,1,0,1,stalls,",
		`"B 1",1,1,0,5,balcony,`,
	)
	var saved api.ChartJSON
	org.do("POST", "/api/v1/charts?name=Hall", good).want(t, http.StatusCreated).json(t, &saved)
	if saved.Seats != 5 || saved.Sections != 2 || saved.Name != "Hall" {
		t.Fatalf("saved %+v", saved)
	}
	var doc chart.Document
	org.do("GET", "/api/v1/charts/"+saved.ID.String(), nil).want(t, http.StatusOK).json(t, &doc)
	a := doc.Sections[0]
	if a.Label != "A" || len(a.Rows) != 2 || !a.Rows[0].Seats[0].Accessible || !a.Rows[0].Seats[1].Companion ||
		doc.Sections[1].Label != "B 1" || len(doc.Categories) != 2 || doc.Categories[1].Key != "balcony" {
		t.Fatalf("read %+v", doc.Chart)
	}

	// A CSV edit keeps the names and colours the chart gave its categories.
	doc.Categories[0].Name, doc.Categories[0].Color = "Stalls", "#111111"
	doc.ID = nil
	org.do("PUT", "/api/v1/charts/"+saved.ID.String(), doc).want(t, http.StatusOK)
	org.do("PUT", "/api/v1/charts/"+saved.ID.String(), good).want(t, http.StatusOK)
	var v3 chart.Document
	org.do("GET", "/api/v1/charts/"+saved.ID.String(), nil).want(t, http.StatusOK).json(t, &v3)
	if v3.Version != 3 || v3.Categories[0] != (chart.Category{Key: "stalls", Name: "Stalls", Color: "#111111"}) || v3.Name != "Hall" {
		t.Fatalf("v3 %+v", v3)
	}

	before := chartRows(t, s.app, ten.Org.ID)
	cases := []struct {
		name   string
		query  string
		body   raw
		fields []string
	}{
		{"no name", "", good, []string{"name"}},
		{"no header", "?name=x", csv("A,1,1,0,0,stalls,"), []string{"line 1"}},
		{"empty file", "?name=x", csv(), []string{"line 1"}},
		{"header only", "?name=x", csv(chart.CSVHeader), []string{"line 2"}},
		{"bad lines", "?name=x", csv(chart.CSVHeader,
			"A,1,1,0,0,stalls,",
			"A,1,two,1,0,stalls,",        // line 3: number
			"A,1,3,2,0",                  // line 4: too few fields
			"A,1,4,x,-,stalls,",          // line 5: x and y
			"A,1,5,4,0,stalls,vip",       // line 6: flag
			"A,1,1,5,0,stalls,",          // line 7: duplicate seat 1
			"A,1,6,0,0,stalls,",          // line 8: on seat 1's spot
			",1,7,7,0,stalls,",           // line 9: no section
			"A,1,8,8,0,stalls,companion", // line 10: companion alone
			"A,1,9,9,0,Bad Key,",         // line 11: category key
		), []string{"line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9", "line 10", "line 11"}},
		{"broken quoting", "?name=x", csv(chart.CSVHeader, "A,1,1,0,0,stalls,", `"A,1,2,1,0,stalls,`), []string{"line 3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := org.do("POST", "/api/v1/charts"+tc.query, tc.body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
			for _, f := range tc.fields {
				if e.Fields[f] == "" {
					t.Errorf("no problem at %s; fields %v", f, e.Fields)
				}
			}
			if len(e.Fields) != len(tc.fields) {
				t.Errorf("problems %v, want exactly %v", e.Fields, tc.fields)
			}
		})
	}
	if after := chartRows(t, s.app, ten.Org.ID); after != before {
		t.Fatalf("refused CSVs wrote rows: %s, then %s", before, after)
	}
}

// TestChartAccess: charts are the organizer's, and another org's chart is
// 404 as if it did not exist.
func TestChartAccess(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ta, tb := testenv.NewTenant(t, s.app, 1), testenv.NewTenant(t, s.app, 1)
	var saved api.ChartJSON
	s.as(ta.Org, ta.Organizer).do("POST", "/api/v1/charts", testChart()).want(t, http.StatusCreated).json(t, &saved)
	path := "/api/v1/charts/" + saved.ID.String()
	before := chartRows(t, s.app, ta.Org.ID)

	other := s.as(tb.Org, tb.Organizer)
	other.do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	other.do("GET", path+"?version=1", nil).wantErr(t, http.StatusNotFound, "not_found")
	other.do("PUT", path, testChart()).wantErr(t, http.StatusNotFound, "not_found")
	other.do("PUT", path, raw{"text/csv", []byte(chart.CSVHeader + "\nA,1,1,0,0,,\n")}).wantErr(t, http.StatusNotFound, "not_found")
	var list struct{ Charts []api.ChartJSON }
	other.do("GET", "/api/v1/charts", nil).want(t, http.StatusOK).json(t, &list)
	if len(list.Charts) != 0 {
		t.Fatalf("org B lists %+v", list.Charts)
	}
	s.as(ta.Org, ta.Organizer).do("GET", "/api/v1/charts/"+uuid.NewString(), nil).wantErr(t, http.StatusNotFound, "not_found")

	for name, c := range map[string]*client{"buyer": s.as(ta.Org, ta.Buyers[0]), "box office": s.as(ta.Org, ta.BoxOffice)} {
		for _, r := range []struct{ method, path string }{{"GET", "/api/v1/charts"}, {"GET", path}, {"POST", "/api/v1/charts"}, {"PUT", path}} {
			if got := c.do(r.method, r.path, testChart()); got.status != http.StatusForbidden {
				t.Errorf("%s %s %s: %d", name, r.method, r.path, got.status)
			}
		}
	}
	s.client().do("GET", "/api/v1/charts", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")

	// The pages: the organizer's, and another org's chart is not found.
	own := s.as(ta.Org, ta.Organizer)
	for _, p := range []string{"/admin/charts", "/admin/charts/new", "/admin/charts/" + saved.ID.String()} {
		if r := own.do("GET", p, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "charteditor") && p != "/admin/charts" {
			t.Errorf("organizer GET %s: %d", p, r.status)
		}
		if r := s.as(ta.Org, ta.BoxOffice).do("GET", p, nil); r.status != http.StatusForbidden {
			t.Errorf("box office GET %s: %d", p, r.status)
		}
	}
	if r := own.do("GET", "/admin/charts", nil); !strings.Contains(string(r.body), "Town hall") {
		t.Errorf("the charts page does not list the chart")
	}
	if r := other.do("GET", "/admin/charts/"+saved.ID.String(), nil); r.status != http.StatusNotFound {
		t.Errorf("org B opens org A's chart page: %d", r.status)
	}
	if r := other.do("GET", "/admin/charts", nil); strings.Contains(string(r.body), "Town hall") {
		t.Errorf("org B's charts page lists org A's chart")
	}
	if after := chartRows(t, s.app, ta.Org.ID); after != before {
		t.Fatalf("org A's charts changed: %s, then %s", before, after)
	}
}

// TestChartDelete: an organizer deletes a chart no event was made from,
// with all its versions (API and page); a chart an event was made from is
// refused with 409 and stays whole; another organization's chart is not
// found and a buyer is forbidden, both changing nothing; a delete racing
// an event made from the same chart ends one way or the other, never
// both (the loser answers 404 or 409, never 500).
func TestChartDelete(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	org := s.as(tn.Org, tn.Organizer)
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	eventFrom := func(chartID uuid.UUID) response {
		return org.do("POST", "/api/v1/events", map[string]any{"name": "Concert", "venue": "Hall", "starts_at": at(72 * time.Hour),
			"time_zone": "Europe/Paris", "on_sale_at": at(-time.Minute), "sales_end_at": at(48 * time.Hour),
			"chart_id": chartID.String(), "prices": []map[string]any{{"category": "front", "price_minor": 4000, "currency": "USD"},
				{"category": "back", "price_minor": 1500, "currency": "USD"}}})
	}

	// Unused, with two versions: gone, versions and all.
	unused := testenv.NewChart(t, a, tn.Org.ID, 2, 4)
	var saved api.ChartJSON
	org.do("GET", "/api/v1/charts/"+unused.ChartID.String(), nil).want(t, http.StatusOK)
	org.do("PUT", "/api/v1/charts/"+unused.ChartID.String(), testChart()).want(t, http.StatusOK).json(t, &saved)
	if saved.Version != 2 {
		t.Fatalf("second version saved as %d", saved.Version)
	}
	before := chartRows(t, a, tn.Org.ID)
	s.as(other.Org, other.Organizer).do("DELETE", "/api/v1/charts/"+unused.ChartID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.Buyers[0]).do("DELETE", "/api/v1/charts/"+unused.ChartID.String(), nil).want(t, http.StatusForbidden)
	org.do("DELETE", "/api/v1/charts/not-a-uuid", nil).wantErr(t, http.StatusNotFound, "not_found")
	if after := chartRows(t, a, tn.Org.ID); after != before {
		t.Fatalf("refused deletes changed the charts: %s, then %s", before, after)
	}
	org.do("DELETE", "/api/v1/charts/"+unused.ChartID.String(), nil).want(t, http.StatusNoContent)
	org.do("GET", "/api/v1/charts/"+unused.ChartID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("DELETE", "/api/v1/charts/"+unused.ChartID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	if got := chartRows(t, a, tn.Org.ID); got != "0 charts, 0 versions" {
		t.Fatalf("after the delete: %s", got)
	}

	// In use: refused, and the chart and its event stay.
	used := testenv.NewChart(t, a, tn.Org.ID, 2, 4)
	eventFrom(used.ChartID).want(t, http.StatusCreated)
	before = chartRows(t, a, tn.Org.ID)
	e := org.do("DELETE", "/api/v1/charts/"+used.ChartID.String(), nil).wantErr(t, http.StatusConflict, "conflict")
	if !strings.Contains(e.Message, "an event was made from this chart") {
		t.Fatalf("refusal: %+v", e)
	}
	if after := chartRows(t, a, tn.Org.ID); after != before {
		t.Fatalf("a refused delete changed the charts: %s, then %s", before, after)
	}

	// The page: a refusal is said on the charts page; a delete goes through.
	org.do("POST", "/admin/charts/"+used.ChartID.String()+"/delete", formBody(url.Values{})).want(t, http.StatusSeeOther)
	if page := org.do("GET", "/admin/charts", nil); !strings.Contains(string(page.body), "an event was made from this chart") ||
		!strings.Contains(string(page.body), "Test chart") {
		t.Fatalf("the charts page after a refused delete: %s", page.body)
	}
	spare := testenv.NewChart(t, a, tn.Org.ID, 1, 2)
	org.do("POST", "/admin/charts/"+spare.ChartID.String()+"/delete", formBody(url.Values{})).want(t, http.StatusSeeOther)
	if page := org.do("GET", "/admin/charts", nil); !strings.Contains(string(page.body), "Chart deleted.") {
		t.Fatalf("the charts page after a delete: %s", page.body)
	}
	org.do("GET", "/api/v1/charts/"+spare.ChartID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")

	// Racing: the delete and an event made from the chart at once.
	outcomes := map[string]int{}
	for range 20 {
		c := testenv.NewChart(t, a, tn.Org.ID, 1, 2)
		var del, ev response
		var wg sync.WaitGroup
		wg.Go(func() { del = org.do("DELETE", "/api/v1/charts/"+c.ChartID.String(), nil) })
		wg.Go(func() { ev = eventFrom(c.ChartID) })
		wg.Wait()
		key := fmt.Sprintf("delete %d, event %d", del.status, ev.status)
		outcomes[key]++
		switch key {
		case "delete 204, event 404", "delete 204, event 409", "delete 409, event 201":
		default:
			t.Fatalf("%s: %s / %s", key, del.body, ev.body)
		}
		var versions int
		if err := a.Pool.QueryRow(t.Context(), `SELECT count(*) FROM chart_versions WHERE org_id = $1 AND chart_id = $2`,
			tn.Org.ID, c.ChartID).Scan(&versions); err != nil {
			t.Fatal(err)
		}
		if (del.status == http.StatusNoContent) != (versions == 0) {
			t.Fatalf("%s, and %d versions left", key, versions)
		}
	}
	t.Logf("racing delete and event: %v", outcomes)
}

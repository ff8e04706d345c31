package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"seatd/internal/chart"
)

// ChartImport is the import of one big venue chart through the API, as
// JSON and as CSV: decoded, validated completely and stored as a new
// chart, timed from the request sent to the 201 received.
type ChartImport struct {
	Seats     int       `json:"seats"`
	JSONBytes int       `json:"json_bytes"`
	CSVBytes  int       `json:"csv_bytes"`
	JSONMS    []float64 `json:"json_ms"` // one per import
	CSVMS     []float64 `json:"csv_ms"`
	OthersCPU float64   `json:"others_cpu_share"`
}

// chartImports is how many times each form is imported (each a new
// chart); the slowest is judged.
const chartImports = 3

func (b *bench) phaseCharts(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	c := benchChart(b.cfg.chartSeats)
	js, err := json.Marshal(c)
	if err != nil {
		return err
	}
	csv := chartCSV(c)
	ci := &ChartImport{Seats: c.SeatCount(), JSONBytes: len(js), CSVBytes: len(csv)}
	cpu0 := b.procs.sampleCPU([]*server{main})
	defer func() { ci.OthersCPU = round3(cpu0.to(b.procs.sampleCPU([]*server{main})).otherShare()) }()
	imp := func(contentType, path string, body []byte) (float64, error) {
		t0 := time.Now()
		code, out, err := main.send(ctx, b.fx.organizer, http.MethodPost, path, contentType, body)
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if code != http.StatusCreated {
			return 0, fmt.Errorf("POST %s (%s): %d %.300s", path, contentType, code, out)
		}
		var saved struct{ Seats int }
		if err := json.Unmarshal(out, &saved); err != nil || saved.Seats != ci.Seats {
			return 0, fmt.Errorf("POST %s: stored %d seats of %d (%v)", path, saved.Seats, ci.Seats, err)
		}
		return round3(ms(d)), nil
	}
	for i := range chartImports {
		d, err := imp("application/json", "/api/v1/charts", js)
		if err != nil {
			return err
		}
		ci.JSONMS = append(ci.JSONMS, d)
		d, err = imp("text/csv", "/api/v1/charts?name=bench-csv-"+strconv.Itoa(i), csv)
		if err != nil {
			return err
		}
		ci.CSVMS = append(ci.CSVMS, d)
	}
	b.rep.Charts = ci
	b.log.printf("chart import %d seats: JSON %.1f MB in %v ms; CSV %.1f MB in %v ms",
		ci.Seats, float64(ci.JSONBytes)/1e6, ci.JSONMS, float64(ci.CSVBytes)/1e6, ci.CSVMS)
	return nil
}

// benchChart is a hall of n seats (rounded down to whole rows): sections
// of 100 rows of 100 seats, three categories, an accessible seat with a
// companion at the end of every tenth row, and a GA floor.
func benchChart(n int) chart.Chart {
	c := chart.Chart{Name: "bench hall", Categories: []chart.Category{
		{Key: "premium", Name: "Premium", Color: "#4f46e5"},
		{Key: "standard", Name: "Standard", Color: "#059669"},
		{Key: "value", Name: "Value", Color: "#d97706"},
	}}
	const rows, perRow = 100, 100
	for s := 0; s*rows*perRow < n; s++ {
		sec := chart.Section{Label: "S" + strconv.Itoa(s+1), Name: "Section " + strconv.Itoa(s+1), Kind: chart.Seated}
		for r := 0; r < rows && (s*rows+r+1)*perRow <= n; r++ {
			row := chart.Row{Label: strconv.Itoa(r + 1)}
			cat := c.Categories[r*3/rows].Key
			for k := range perRow {
				st := chart.Seat{Number: k + 1, X: (s%4)*(perRow+5) + k, Y: (s/4)*(rows+5) + r, Category: cat}
				if r%10 == 9 && k == perRow-2 {
					st.Accessible = true
				}
				if r%10 == 9 && k == perRow-1 {
					st.Companion = true
				}
				row.Seats = append(row.Seats, st)
			}
			sec.Rows = append(sec.Rows, row)
		}
		c.Sections = append(c.Sections, sec)
	}
	c.Sections = append(c.Sections, chart.Section{Label: "Floor", Name: "Standing", Kind: chart.GA, Capacity: 2000, Category: "value"})
	return c
}

// chartCSV writes the seated part of c in the import's CSV form.
func chartCSV(c chart.Chart) []byte {
	var b bytes.Buffer
	b.WriteString(chart.CSVHeader + "\n")
	for _, s := range c.Sections {
		for _, r := range s.Rows {
			for _, st := range r.Seats {
				flags := ""
				if st.Accessible {
					flags = "accessible"
				} else if st.Companion {
					flags = "companion"
				}
				fmt.Fprintf(&b, "%s,%s,%d,%d,%d,%s,%s\n", s.Label, r.Label, st.Number, st.X, st.Y, st.Category, flags)
			}
		}
	}
	return b.Bytes()
}

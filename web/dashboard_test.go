package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// metricSamples scrapes an ops handler's /metrics and returns every
// sample's value by its name and labels as exposed ("name{labels}").
func metricSamples(t *testing.T, ops http.Handler) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(ops)
	defer srv.Close()
	r, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// metricName matches a metric name of seatd's or of the Go and process
// collectors in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:seatd|go|process)_[a-zA-Z0-9_]+\b`)

// TestDashboardNamesExportedMetrics serves a real app, makes the traffic
// that creates the per-event and per-outcome series (a buyer's socket, a
// hold, a conflict), scrapes the ops listener's /metrics, and checks that
// every metric named by a panel query or a variable of
// deploy/grafana/seatd.json is one the service exports — and that the hub
// measured the hold's commit → frame latency for its event.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 5)
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[3]
	x, y := s.as(tn.Org, tn.Buyers[0]), s.as(tn.Org, tn.Buyers[1])
	conn, _, err := s.socket(t, x, ev.ID, s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	y.do("POST", path, map[string]string{"seat_id": seat.String()}).want(t, http.StatusCreated)
	waitSeat(t, conn, seat, "held", 5*time.Second)
	x.do("POST", path, map[string]string{"seat_id": seat.String()}).want(t, http.StatusConflict)

	// The frame is counted once written; the writer may still be at it.
	propagation := `seatd_live_propagation_seconds_count{event="` + ev.ID.String() + `",org="` + tn.Org.ID.String() + `"}`
	var samples map[string]float64
	testsvc.Eventually(t, 5*time.Second, "the hub's latency sample for the event", func() bool {
		samples = metricSamples(t, s.srv.Ops())
		return samples[propagation] >= 1
	})
	names := map[string]bool{}
	for k := range samples {
		n := strings.SplitN(k, "{", 2)[0]
		names[n] = true
		// A histogram is named without its series' suffixes too.
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok {
				names[base] = true
			}
		}
	}

	b, err := os.ReadFile("../deploy/grafana/seatd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels     []dashPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("seatd.json: %v", err)
	}
	check := func(where, expr string) int {
		found := metricName.FindAllString(expr, -1)
		for _, n := range found {
			if !names[n] {
				t.Errorf("%s: %s is not exported by seatd (query %s)", where, n, expr)
			}
		}
		return len(found)
	}
	queries, panels := 0, 0
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			panels++
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no queries", p.Title)
			}
			for _, q := range p.Targets {
				queries++
				if check("panel "+strconv.Quote(p.Title), q.Expr) == 0 {
					t.Errorf("panel %q: query %q names no seatd metric", p.Title, q.Expr)
				}
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			check("variable "+v.Name, q.Query)
		}
	}
	if panels < 10 {
		t.Fatalf("only %d panels in the dashboard", panels)
	}
	// The alert rules too: a renamed metric would leave an alert that can
	// never fire (promtool's tests feed it the old name).
	rules, err := os.ReadFile("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for i, line := range strings.Split(string(rules), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			named += check(fmt.Sprintf("deploy/prometheus/alerts.yml:%d", i+1), line)
		}
	}
	if named < 10 {
		t.Fatalf("only %d metric names in the alert rules", named)
	}
	t.Logf("%d panels, %d queries: every metric they name is exported (%d metric names scraped)", panels, queries, len(names))
}

type dashPanel struct {
	Type    string      `json:"type"`
	Title   string      `json:"title"`
	Panels  []dashPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestVerifyComparesCategories: the dashboard's check against Postgres
// compares each price category's counts too: a seat moved to another
// category behind the hot cache's back leaves every total and section
// count equal, and is caught all the same, by name.
func TestVerifyComparesCategories(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := gaChartEvent(t, s.app, tn)
	org := s.as(tn.Org, tn.Organizer)
	verify := func() string {
		return string(org.do("POST", "/admin/events/"+ev.String()+"/occupancy/verify", nil).want(t, http.StatusOK).body)
	}
	if v := verify(); !strings.Contains(v, `data-testid="verified"`) {
		t.Fatalf("before: %s", v)
	}
	if _, err := s.app.Pool.Exec(context.Background(), `UPDATE seats SET category = 'back'
		WHERE id = (SELECT id FROM seats WHERE event_id = $1 AND category = 'front' ORDER BY idx LIMIT 1)`, ev); err != nil {
		t.Fatal(err)
	}
	if v := verify(); !strings.Contains(v, `data-testid="verify-mismatch"`) || !strings.Contains(v, "the counts of category Front do not") {
		t.Fatalf("after a seat changed category behind the cache: %s", v)
	}
}

package views

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

func text(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestOccupancyPanel(t *testing.T) {
	o := Occupancy{EventID: "e1", Counts: Counts{Available: 150, Held: 45, Sold: 155},
		Sections: []SectionCounts{{Label: "A", Name: "Stalls", Counts: Counts{Available: 100, Held: 40, Sold: 60}},
			{Label: "B", Name: "Circle", Counts: Counts{Available: 50, Held: 5, Sold: 95}}}}
	for _, oob := range []bool{false, true} {
		doc := render(t, OccupancyPanel(o, oob))
		for sel, want := range map[string]string{
			"[data-testid=count-total]":               "350",
			"[data-testid=count-held]":                "45",
			"[data-testid=pct-held]":                  "12.9 %",
			"[data-testid=pct-sold]":                  "44.3 %",
			"[data-testid=pct-available]":             "42.9 %",
			"[data-testid=count-blocked]":             "0",
			"tr[data-section=B] td[data-count=sold]":  "95 63.3 %",
			"tr[data-section=A] td[data-count=total]": "200",
			"tr[data-section=A] th":                   "A Stalls",
		} {
			if got := text(doc.Find(sel).First().Text()); got != want {
				t.Errorf("oob=%v %s = %q, want %q", oob, sel, got, want)
			}
		}
		p := doc.Find("#occupancy")
		if v, ok := p.Attr("hx-swap-oob"); ok != oob || (oob && v != "true") {
			t.Errorf("oob=%v: hx-swap-oob=%q (%v)", oob, v, ok)
		}
		if v, _ := p.Attr("hx-get"); v != "/admin/events/e1/occupancy" {
			t.Errorf("resync from %q", v)
		}
		// Bars are SVG rectangles sized by attribute: no inline style.
		rects := doc.Find("svg").First().Find("rect")
		if rects.Length() != 4 || doc.Find("[style]").Length() != 0 {
			t.Errorf("%d rects in the total bar, %d styled elements", rects.Length(), doc.Find("[style]").Length())
		}
		if w, _ := rects.Eq(1).Attr("width"); w != "44.29" {
			t.Errorf("sold share width %q", w)
		}
	}
}

// TestOccupancyPanelStanding: a standing section's row says so, and the
// total says how many of its seats are standing places; an event without
// one speaks of seats only.
func TestOccupancyPanelStanding(t *testing.T) {
	o := Occupancy{EventID: "e1", Counts: Counts{Available: 250, Held: 30, Sold: 20},
		Sections: []SectionCounts{{Label: "A", Name: "Stalls", Counts: Counts{Available: 180, Sold: 20}},
			{Label: "G", Name: "Standing", Standing: true, Counts: Counts{Available: 70, Held: 30}}}}
	doc := render(t, OccupancyPanel(o, false))
	for sel, want := range map[string]string{
		"#occupancy-title":                        "Occupancy · 300 seats and places (100 standing)",
		"tr[data-section=G] th":                   "G Standing standing",
		"tr[data-section=G] td[data-count=held]":  "30 30.0 %",
		"tr[data-section=A] th":                   "A Stalls",
		"tr[data-section=G] td[data-count=total]": "100",
	} {
		if got := text(doc.Find(sel).First().Text()); got != want {
			t.Errorf("%s = %q, want %q", sel, got, want)
		}
	}
	o.Sections[1].Standing = false
	if got := text(render(t, OccupancyPanel(o, false)).Find("#occupancy-title").Text()); got != "Occupancy · 300 seats" {
		t.Errorf("title without standing sections %q", got)
	}
}

func TestCountsEmptyVenue(t *testing.T) {
	if got := (Counts{}).Pct(0); got != "0.0 %" {
		t.Errorf("empty venue %q", got)
	}
	if len((Counts{}).Segments()) != 0 {
		t.Error("segments of an empty venue")
	}
}

func TestFeed(t *testing.T) {
	at := time.Date(2030, 5, 1, 19, 4, 5, 0, time.UTC)
	es := []FeedEntry{{Kind: "released", Seat: "B-A-2", At: at.Add(time.Second)}, {Kind: "held", Seat: "B-A-2", At: at}}
	doc := render(t, FeedOOB(es))
	ol := doc.Find(`ol[hx-swap-oob="afterbegin:#feed"]`)
	if ol.Length() != 1 || ol.Find("li").Length() != 2 {
		t.Fatalf("feed frame: %d lists, %d items", ol.Length(), ol.Find("li").Length())
	}
	li := ol.Find("li").Eq(1)
	if k, _ := li.Attr("data-kind"); k != "held" {
		t.Errorf("second entry kind %q", k)
	}
	if got := text(li.Text()); got != "19:04:05 held B-A-2" {
		t.Errorf("entry %q", got)
	}
	if dt, _ := li.Find("time").Attr("datetime"); dt != "2030-05-01T19:04:05Z" {
		t.Errorf("datetime %q", dt)
	}
	doc = render(t, Feed("e1", es))
	if v, _ := doc.Find("#feed").Attr("data-max-items"); v != "50" {
		t.Errorf("data-max-items %q", v)
	}
}

func TestHoldRowCountdown(t *testing.T) {
	until := time.Date(2030, 5, 1, 19, 14, 5, 0, time.FixedZone("x", 3600))
	r := HoldRow{HoldID: "h1", SeatID: "s1", Seat: "B-A-2", Section: "B", Email: "ann@x.example",
		Since: until.Add(-10 * time.Minute), Until: until, Extended: true}
	doc := render(t, HoldRowsOOB([]HoldRow{r}))
	tb := doc.Find(`table[hx-swap-oob="beforeend:#holds"] > tbody#hold-s1`)
	if tb.Length() != 1 {
		t.Fatal("row is not a tbody with the seat's id inside an out-of-band table")
	}
	if v, _ := tb.Find("[data-until]").Attr("data-until"); v != "2030-05-01T18:14:05Z" {
		t.Errorf("data-until %q (want UTC RFC 3339)", v)
	}
	if v, _ := tb.Find("input[name=hold_id]").Attr("value"); v != "h1" {
		t.Errorf("checkbox value %q", v)
	}
	if s, _ := tb.Attr("data-section"); s != "B" {
		t.Errorf("data-section %q", s)
	}
	if !strings.Contains(tb.Text(), "ann@x.example") || !strings.Contains(tb.Text(), "extended") {
		t.Errorf("row text %q", text(tb.Text()))
	}
	doc = render(t, HoldRowDeleteOOB("s1"))
	if v, _ := doc.Find("div").Attr("hx-swap-oob"); v != "delete:#hold-s1" {
		t.Errorf("delete %q", v)
	}
}

func TestForecast(t *testing.T) {
	now := time.Date(2030, 5, 1, 19, 0, 0, 0, time.UTC)
	f := Forecast{Now: now, Window: 2 * time.Minute, Expiries: []Expiry{
		{At: now.Add(-5 * time.Second), N: 9}, // overdue: the reaper's, not the forecast's
		{At: now.Add(30 * time.Second), N: 2},
		{At: now.Add(2 * time.Minute), N: 1},
		{At: now.Add(2*time.Minute + time.Second), N: 4},
	}}
	if f.Count() != 3 {
		t.Errorf("count %d, want 3", f.Count())
	}
	doc := render(t, ForecastPanel(f, true))
	if got := text(doc.Find("[data-testid=forecast]").Text()); got != "3 holds expire in the next 2 minutes." {
		t.Errorf("forecast %q", got)
	}
	u := now.Unix()
	if v, _ := doc.Find("#forecast").Attr("data-expiries"); v != fmt.Sprintf("%d:9 %d:2 %d:1 %d:4", u-5, u+30, u+120, u+121) {
		t.Errorf("data-expiries %q", v)
	}
	one := Forecast{Now: now, Window: 2 * time.Minute, Expiries: []Expiry{{At: now.Add(time.Minute), N: 1}}}
	if got := text(render(t, ForecastPanel(one, false)).Find("[data-testid=forecast]").Text()); got != "1 hold expires in the next 2 minutes." {
		t.Errorf("singular %q", got)
	}
}

func TestChart(t *testing.T) {
	t0 := time.Date(2030, 5, 1, 18, 0, 0, 0, time.UTC)
	pts := []ChartPoint{
		{At: t0, Counts: Counts{Available: 100}},
		{At: t0.Add(30 * time.Minute), Counts: Counts{Available: 50, Held: 25, Sold: 25}},
		{At: t0.Add(time.Hour), Counts: Counts{Available: 0, Sold: 100}},
	}
	c := NewChart(pts)
	doc := render(t, ChartFigure(c, true))
	if doc.Find("#chart svg polyline").Length() != 4 {
		t.Fatalf("%d lines", doc.Find("#chart svg polyline").Length())
	}
	sold, _ := doc.Find("polyline[data-series=sold]").Attr("points")
	// Sold goes 0 % → 25 % → 100 %, left edge to right edge.
	if sold != "44.00,192.00 336.00,147.00 628.00,12.00" {
		t.Errorf("sold points %q", sold)
	}
	if d, _ := doc.Find("polyline[data-series=held]").Attr("stroke-dasharray"); d == "" {
		t.Error("held line is not dashed: lines must differ by more than colour")
	}
	if label, _ := doc.Find("#chart svg").Attr("aria-label"); !strings.Contains(label, "sold 100.0 %") {
		t.Errorf("chart label %q", label)
	}
	if got := text(doc.Find("#chart svg text").Last().Text()); got != "19:00" {
		t.Errorf("last x label %q", got)
	}
	// Thinning keeps at most 240 points, the first and the last among them.
	many := make([]ChartPoint, 1000)
	for i := range many {
		many[i] = ChartPoint{At: t0.Add(time.Duration(i) * time.Second), Counts: Counts{Available: 1}}
	}
	if c := NewChart(many); c.Points != 240 || !c.From.Equal(t0) || !c.To.Equal(many[999].At) {
		t.Errorf("thinned to %d points from %v to %v", c.Points, c.From, c.To)
	}
	if c := NewChart(nil); c.Points != 0 || !strings.Contains(render(t, ChartFigure(c, false)).Text(), "No occupancy recorded yet.") {
		t.Error("empty chart")
	}
}

func TestRegistryPanelAndModeBanner(t *testing.T) {
	doc := render(t, RegistryPanel(Registry{EventID: "e1", HotCache: 3, Redis: 0, Postgres: 3, Breaker: "closed"}, false))
	if v, _ := doc.Find("#registry").Attr("data-consistent"); v != "false" {
		t.Errorf("data-consistent %q", v)
	}
	if !strings.HasPrefix(text(doc.Find("[data-testid=registry-state]").Text()), "Inconsistent") {
		t.Errorf("state %q", text(doc.Find("[data-testid=registry-state]").Text()))
	}
	if v, _ := doc.Find("button[hx-post]").Attr("hx-post"); v != "/admin/events/e1/registry/reconcile" {
		t.Errorf("reconcile posts to %q", v)
	}
	doc = render(t, RegistryPanel(Registry{EventID: "e1", HotCache: 1, Redis: 1, Postgres: 1, Consistent: true}, true))
	if got := text(doc.Find("[data-testid=registry-state]").Text()); got != "Consistent: every tier has the same 1 active hold." {
		t.Errorf("state %q", got)
	}
	doc = render(t, ModeBanner(Mode{FastPath: false, Breaker: "open"}, true))
	if got := doc.Find("[data-testid=degraded]").Text(); !strings.HasPrefix(got, "Degraded: Redis unavailable, running on Postgres") {
		t.Errorf("banner %q", got)
	}
	if render(t, ModeBanner(Mode{FastPath: true}, false)).Find("#mode-banner").Children().Length() != 0 {
		t.Error("banner shown on the fast path")
	}
}

func TestBoxSeat(t *testing.T) {
	for status, want := range map[string]string{"available": "block", "blocked": "unblock", "held": "block", "sold": "block"} {
		s := Seat{ID: "s1", EventID: "e1", Section: "B", Row: "A", Number: 2, Col: 3, GridRow: 1, Status: status, Version: 7}
		b := render(t, BoxSeat(s, true)).Find("button#bo-seat-s1")
		if v, _ := b.Attr("hx-post"); v != "/box-office/events/e1/seats/s1/"+want {
			t.Errorf("%s: posts to %q", status, v)
		}
		if v, _ := b.Attr("aria-pressed"); v != map[bool]string{true: "true", false: "false"}[status == "blocked"] {
			t.Errorf("%s: aria-pressed %q", status, v)
		}
		_, disabled := b.Attr("aria-disabled")
		if disabled != (status == "held" || status == "sold") {
			t.Errorf("%s: aria-disabled %v", status, disabled)
		}
		if v, _ := b.Attr("data-version"); v != "7" {
			t.Errorf("data-version %q", v)
		}
	}
}

func TestAuditPage(t *testing.T) {
	at := time.Date(2030, 5, 1, 19, 4, 5, 0, time.UTC)
	l := AuditLog{EventID: "e1", EventName: "Show", Actions: []string{"hold.released"},
		Filter: AuditFilter{Seat: "B-A-2", Action: "hold.released"},
		Rows: []AuditRow{{ID: 42, At: at, Action: "hold.released", Actor: "box@x.example", Holder: "ann@x.example",
			Seat: "B-A-2", Reason: "asked to"}, {ID: 41, At: at, Action: "hold.expired", Holder: "bob@x.example", Seat: "B-A-3"}},
		Older: "/admin/events/e1/audit?seat=B-A-2&action=hold.released&before=41"}
	doc := render(t, AuditPage(Page{Title: "t", Asset: asset}, l))
	r := doc.Find("#audit tbody tr")
	if r.Length() != 2 {
		t.Fatalf("%d rows", r.Length())
	}
	var cells []string
	r.Eq(0).Find("td").Each(func(_ int, c *goquery.Selection) { cells = append(cells, text(c.Text())) })
	if got := strings.Join(cells, "|"); got != "2030-05-01 19:04:05|hold.released|B-A-2|box@x.example|ann@x.example|asked to" {
		t.Errorf("row %q", got)
	}
	if got := r.Eq(1).Find("[data-col=actor]").Text(); got != "system" {
		t.Errorf("reaper's row actor %q", got)
	}
	if v, _ := doc.Find("a[rel=next]").Attr("href"); v != l.Older {
		t.Errorf("older link %q", v)
	}
	if v, _ := doc.Find("a:contains('Newest')").Attr("href"); v != "/admin/events/e1/audit?seat=B-A-2&action=hold.released" {
		t.Errorf("newest link %q", v)
	}
	if v, _ := doc.Find("select[name=action] option[selected]").Attr("value"); v != "hold.released" {
		t.Errorf("selected action %q", v)
	}
}

func TestReleaseNotice(t *testing.T) {
	doc := render(t, ReleaseNotice("B-A-2"))
	if v, _ := doc.Find("div").Attr("hx-swap-oob"); v != "beforebegin:#cart-items" {
		t.Errorf("notice goes to %q", v)
	}
	if got := doc.Find("[data-testid=cart-notice]").Text(); got != "Your hold on seat B-A-2 was released by the box office." {
		t.Errorf("notice %q", got)
	}
}

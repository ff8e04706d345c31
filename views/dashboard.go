package views

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// View models of the organizer's dashboard: live counts, the registry
// panel, the expiry forecast and the occupancy chart.

// Counts is the number of seats in each state.
type Counts struct {
	Available, Held, Sold, Blocked int
}

// Total is the number of seats counted.
func (c Counts) Total() int { return c.Available + c.Held + c.Sold + c.Blocked }

// Pct is n as a percentage of the total with one decimal ("42.9 %"); an
// empty venue is 0 %.
func (c Counts) Pct(n int) string {
	return strconv.FormatFloat(pct(n, c.Total()), 'f', 1, 64) + " %"
}

func pct(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) * 100 / float64(total)
}

// Summary lists the states' shares: "sold 12.0 %, held 3.0 %, ...".
func (c Counts) Summary() string {
	return "sold " + c.Pct(c.Sold) + ", held " + c.Pct(c.Held) + ", blocked " + c.Pct(c.Blocked) +
		", available " + c.Pct(c.Available)
}

// Segment is one state's share of a stacked bar, in percent of its width.
type Segment struct {
	Status string
	X, W   string
}

// Segments lays the states out side by side on a 0–100 bar.
func (c Counts) Segments() []Segment {
	var out []Segment
	x := 0.0
	for _, s := range []struct {
		status string
		n      int
	}{{"sold", c.Sold}, {"held", c.Held}, {"blocked", c.Blocked}, {"available", c.Available}} {
		w := pct(s.n, c.Total())
		if w > 0 {
			out = append(out, Segment{Status: s.status, X: num(x), W: num(w)})
		}
		x += w
	}
	return out
}

// StatusColor is the fill of a state in charts and bars; charts also
// differ by dash pattern, so they read without colour.
func StatusColor(status string) string {
	switch status {
	case "available":
		return "#16a34a"
	case "held":
		return "#d97706"
	case "sold":
		return "#b91c1c"
	case "blocked":
		return "#4b5563"
	}
	return "#6b7280"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// SectionCounts is one section's counts.
type SectionCounts struct {
	Label string
	Name  string
	// Standing marks a general-admission section, counted in places.
	Standing bool
	Counts
}

// Places is how many of the event's seats are standing places (those of
// its general-admission sections).
func (o Occupancy) Places() int {
	n := 0
	for _, s := range o.Sections {
		if s.Standing {
			n += s.Total()
		}
	}
	return n
}

// CategoryCounts is one price category's counts and revenue.
type CategoryCounts struct {
	Name        string
	Price       string
	RevenueSold string
	RevenueHeld string
	Counts
}

// Occupancy is the live counts panel of an event.
type Occupancy struct {
	EventID string
	Counts
	Sections   []SectionCounts
	Categories []CategoryCounts
}

// Verification is the last check of the live counters against Postgres.
type Verification struct {
	EventID string
	At      time.Time
	OK      bool
	Live    Counts
	DB      Counts
	Took    time.Duration
	// Where names the first part that differs ("the totals", "section A",
	// "category Front") when !OK.
	Where string
	// Err is set when Postgres could not be asked.
	Err string
}

// Diff says where the live counters and Postgres disagree.
func (v Verification) Diff() string {
	var p []string
	for _, d := range []struct {
		name     string
		live, db int
	}{{"available", v.Live.Available, v.DB.Available}, {"held", v.Live.Held, v.DB.Held},
		{"sold", v.Live.Sold, v.DB.Sold}, {"blocked", v.Live.Blocked, v.DB.Blocked}} {
		if d.live != d.db {
			p = append(p, d.name+" "+strconv.Itoa(d.live)+" live, "+strconv.Itoa(d.db)+" in Postgres")
		}
	}
	if len(p) == 0 && v.Where != "" {
		return "the totals agree, the counts of " + v.Where + " do not"
	}
	return strings.Join(p, "; ")
}

// Millis is d in whole milliseconds, at least 1 when positive.
func Millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms == 0 && d > 0 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10) + " ms"
}

// Expiry is how many holds end within one second.
type Expiry struct {
	At time.Time
	N  int
}

// Forecast says how many holds expire soon. The page recounts it every
// second from Expiries, so it stays right between updates.
type Forecast struct {
	Now      time.Time
	Window   time.Duration
	Expiries []Expiry
}

// Count is the number of holds expiring after Now and within Window.
func (f Forecast) Count() int {
	n := 0
	end := f.Now.Add(f.Window)
	for _, e := range f.Expiries {
		if e.At.After(f.Now.Add(-time.Second)) && !e.At.After(end) {
			n += e.N
		}
	}
	return n
}

// Data encodes Expiries for the page script: "unixSeconds:count ...".
func (f Forecast) Data() string {
	var b strings.Builder
	for i, e := range f.Expiries {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(e.At.Unix(), 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.N))
	}
	return b.String()
}

// WindowText is the window for people: "2 minutes".
func (f Forecast) WindowText() string {
	if f.Window%time.Minute == 0 {
		m := int(f.Window / time.Minute)
		if m == 1 {
			return "minute"
		}
		return strconv.Itoa(m) + " minutes"
	}
	return strconv.Itoa(int(f.Window/time.Second)) + " seconds"
}

// Registry is the agreement of the three tiers about an event's holds.
type Registry struct {
	EventID    string
	HotCache   int
	Redis      int
	Postgres   int
	Consistent bool
	Breaker    string
	RedisError string
	CheckedAt  time.Time
	// Message says what the last action did ("Reconciled: ...").
	Message string
	// Err is set when the status could not be read at all.
	Err string
}

// Mode is whether holds run on the fast path (Redis) or degraded.
type Mode struct {
	FastPath bool
	Breaker  string
}

// FeedEntry is one line of hold activity.
type FeedEntry struct {
	Kind string // held, released, expired, sold, blocked, unblocked, extended, cancelled
	Seat string // "B-A-12"
	At   time.Time
}

// KindText is what a feed entry says happened.
func (e FeedEntry) KindText() string {
	switch e.Kind {
	case "held", "released", "expired", "sold", "blocked", "unblocked", "extended", "cancelled":
		return e.Kind
	}
	return "changed"
}

// Dashboard is the organizer's page of an event.
type Dashboard struct {
	EventID   string
	EventName string
	Mode      Mode
	Occupancy Occupancy
	Verify    Verification
	Forecast  Forecast
	Chart     Chart
	Registry  Registry
	Feed      []FeedEntry
	// Revenue is the online payments' figures per category.
	Revenue []RevenueRow
	// Door is the figures at the door, live.
	Door DoorFigures
}

// ChartPoint is the occupancy at one time.
type ChartPoint struct {
	At time.Time
	Counts
}

// ChartSeries is one state's line.
type ChartSeries struct {
	Status string
	Color  string
	Dash   string // stroke-dasharray, "" for solid
	Points string // SVG polyline points
	Last   string // the latest value, "12.5 %"
	LastY  string // the latest value's y
}

// ChartTick is an axis label.
type ChartTick struct {
	X, Y  string
	Label string
}

// Chart is an occupancy-over-time chart drawn as inline SVG.
type Chart struct {
	Width, Height int
	// The plot area.
	Left, Top, Right, Bottom int
	Series                   []ChartSeries
	XTicks, YTicks           []ChartTick
	Points                   int
	From, To                 time.Time
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH                 = 640, 220
	chartL, chartT, chartR, chartB = 44, 12, 628, 192
	maxChartPoints                 = 240
)

// NewChart draws points (oldest first; the last is the live point) as
// percentages of the venue over their time span. More than 240 points are
// thinned evenly, keeping the first and the last.
func NewChart(points []ChartPoint) Chart {
	c := Chart{Width: chartW, Height: chartH, Left: chartL, Top: chartT, Right: chartR, Bottom: chartB}
	if len(points) > maxChartPoints {
		thin := make([]ChartPoint, 0, maxChartPoints)
		step := float64(len(points)-1) / float64(maxChartPoints-1)
		for i := range maxChartPoints {
			thin = append(thin, points[int(math.Round(float64(i)*step))])
		}
		points = thin
	}
	c.Points = len(points)
	for _, y := range []int{0, 25, 50, 75, 100} {
		c.YTicks = append(c.YTicks, ChartTick{X: num(chartL - 6), Y: num(yOf(float64(y))), Label: strconv.Itoa(y) + " %"})
	}
	if len(points) == 0 {
		return c
	}
	c.From, c.To = points[0].At, points[len(points)-1].At
	span := c.To.Sub(c.From)
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return chartR
		}
		return chartL + float64(t.Sub(c.From))/float64(span)*(chartR-chartL)
	}
	for _, s := range []struct {
		status string
		dash   string
		get    func(Counts) int
	}{
		{"available", "", func(c Counts) int { return c.Available }},
		{"held", "6 4", func(c Counts) int { return c.Held }},
		{"sold", "", func(c Counts) int { return c.Sold }},
		{"blocked", "2 3", func(c Counts) int { return c.Blocked }},
	} {
		var b strings.Builder
		for i, p := range points {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(num(xOf(p.At)) + "," + num(yOf(pct(s.get(p.Counts), p.Total()))))
		}
		last := points[len(points)-1]
		c.Series = append(c.Series, ChartSeries{Status: s.status, Color: StatusColor(s.status), Dash: s.dash,
			Points: b.String(), Last: last.Pct(s.get(last.Counts)), LastY: num(yOf(pct(s.get(last.Counts), last.Total())))})
	}
	labels := []time.Time{c.From}
	if span > 0 {
		labels = append(labels, c.From.Add(span/2), c.To)
	}
	for _, t := range labels {
		c.XTicks = append(c.XTicks, ChartTick{X: num(xOf(t)), Y: num(chartB + 16), Label: t.UTC().Format("15:04")})
	}
	return c
}

func yOf(p float64) float64 { return chartB - p/100*(chartB-chartT) }

// StrokeWidth is a series' line width: sold is drawn heaviest.
func (s ChartSeries) StrokeWidth() string {
	if s.Status == "sold" {
		return "2.5"
	}
	return "1.5"
}

// Summary describes the chart for screen readers.
func (c Chart) Summary() string {
	if c.Points == 0 {
		return "No occupancy recorded yet."
	}
	parts := make([]string, len(c.Series))
	for i, s := range c.Series {
		parts[i] = s.Status + " " + s.Last
	}
	return "Occupancy from " + c.From.UTC().Format("15:04") + " to " + c.To.UTC().Format("15:04") + " UTC, " +
		strconv.Itoa(c.Points) + " points; now " + strings.Join(parts, ", ") + "."
}

// DoorFigures are an event's figures at the door on its dashboard:
// admitted of expected (valid tickets), by entrance.
type DoorFigures struct {
	EventID            string
	Admitted, Expected int
	Entrances          []EntranceCount
}

package pages

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// SeatMap is an event's venue for a buyer (and for staff looking): the
// overview of every section, the seats of one, the standing sections, the
// best-seats control and the cart beside it.
type SeatMap struct {
	render   Renderer
	visible  VisibleEvents
	seats    Seats
	cart     *Cart
	maxSeats int
}

// build builds the venue view of an event for the actor: the overview
// of every seated section and the seats of one (section; the first when
// empty or unknown). Only that section's seats become elements, so the
// page grows with the largest section, not with the venue.
func (p *SeatMap) build(ctx context.Context, a hold.Actor, event uuid.UUID, section string) (views.SeatMap, error) {
	ev, err := p.visible.Event(ctx, a, event)
	if err != nil {
		return views.SeatMap{}, err
	}
	_, seats, err := p.seats.SeatViews(ctx, a, event)
	if err != nil {
		return views.SeatMap{}, err
	}
	ga, seats, err := p.gaPanel(ctx, a, event, seats)
	if err != nil {
		return views.SeatMap{}, err
	}
	m := views.SeatMap{EventID: event.String(), EventName: ev.Name, GA: ga}
	for i, c := range ev.Categories {
		m.Categories = append(m.Categories, views.Category{Cat: i + 1, Key: c.Key, Name: c.Name, Color: c.Color,
			Price: money.Format(c.PriceMinor, c.Currency)})
	}
	if err := hold.NotOnSale(ev, time.Now()); err != nil && a.Role == hold.RoleBuyer {
		m.NotOnSale = httpx.Message(err) + "."
	}
	m.Choose = views.Choose{EventID: m.EventID, Categories: m.Categories, Strict: ev.OrphanRule == "strict",
		MaxSeats: p.maxSeats}
	if ev.AccessibleReleaseAt != nil && time.Now().Before(*ev.AccessibleReleaseAt) {
		m.Choose.ReleaseAt = ev.AccessibleReleaseAt.UTC().Format(time.RFC3339)
	}
	m.Overview = overview(seats, m.Choose.ReleaseAt != "")
	for _, b := range m.Overview.Sections {
		m.Choose.Sections = append(m.Choose.Sections, b.Label)
	}
	if len(m.Choose.Sections) > 0 {
		m.Section = m.Choose.Sections[0]
		if slices.Contains(m.Choose.Sections, section) {
			m.Section = section
		}
	}
	var box views.SectionBox
	for i := range m.Overview.Sections {
		if b := &m.Overview.Sections[i]; b.Label == m.Section {
			b.Selected, box = true, *b
		}
	}
	// Seats sit on the section's own grid: column 1 holds the row letters.
	rows := map[string]bool{}
	for _, st := range seats {
		m.Choose.HasAccessible = m.Choose.HasAccessible || st.Accessible
		if st.Section != m.Section {
			continue
		}
		vm := seatVM(event, st, a.User)
		vm.Col, vm.GridRow = st.X-box.X+2, st.Y-box.Y+1
		m.Seats = append(m.Seats, vm)
		if !rows[st.Row] {
			rows[st.Row] = true
			m.Rows = append(m.Rows, views.Label{Text: st.Row, Col: 1, GridRow: vm.GridRow})
		}
	}
	return m, nil
}

// overview outlines every section in venue coordinates with its free
// seats, and encodes every seat's state and version for the page
// script's model of the venue. While accessible and companion seats are
// held back (heldBack), they are not counted free (a buyer who ticks "I
// need accessible seating" sees them counted, and every map counts them
// from the release time on: the page script does both) and their
// indexes are listed for the script.
func overview(seats []hold.SeatView, heldBack bool) views.Overview {
	var o views.Overview
	if len(seats) == 0 {
		return o
	}
	type acc struct{ minX, minY, maxX, maxY, free, total int }
	byLabel := map[string]*acc{}
	var keptIdx []string
	var order []string
	n := 0
	minX, minY, maxX, maxY := seats[0].X, seats[0].Y, seats[0].X, seats[0].Y
	for _, st := range seats {
		b, ok := byLabel[st.Section]
		if !ok {
			b = &acc{minX: st.X, minY: st.Y, maxX: st.X, maxY: st.Y}
			byLabel[st.Section] = b
			order = append(order, st.Section)
		}
		b.minX, b.minY, b.maxX, b.maxY = min(b.minX, st.X), min(b.minY, st.Y), max(b.maxX, st.X), max(b.maxY, st.Y)
		b.total++
		kept := heldBack && seatFlag(st.Seat) != ""
		if st.Status == store.Available && !kept {
			b.free++
		}
		if kept {
			keptIdx = append(keptIdx, strconv.Itoa(st.Idx))
		}
		minX, minY, maxX, maxY = min(minX, st.X), min(minY, st.Y), max(maxX, st.X), max(maxY, st.Y)
		n = max(n, st.Idx+1)
	}
	o.MinX, o.MinY, o.W, o.H = minX, minY, maxX-minX+1, maxY-minY+1
	o.StageH = max(2, (o.W+o.H)/40)
	secOf := make(map[string]int, len(order))
	for i, l := range order {
		b := byLabel[l]
		w, h := b.maxX-b.minX+1, b.maxY-b.minY+1
		// The label and the count below it, centred: up to half a
		// shallow section's depth, a fifth of a narrow one's width.
		fs := max(1, min(w/5, h/3))
		free := max(1, fs*2/3)
		top := b.minY + (h-fs-free)/2
		o.Sections = append(o.Sections, views.SectionBox{Label: l, X: b.minX, Y: b.minY, W: w, H: h,
			Available: b.free, Total: b.total, FontSize: fs, FreeSize: free, TextX: b.minX + w/2, TextY: top + fs, FreeY: top + fs + free})
		secOf[l] = i
	}
	states := bytes.Repeat([]byte{'-'}, n)
	versions := make([]int64, n)
	secs := make([]int, n)
	for _, st := range seats {
		states[st.Idx] = stateLetter(st.Status)
		versions[st.Idx] = st.Version
		secs[st.Idx] = secOf[st.Section]
	}
	o.States = string(states)
	o.Kept = strings.Join(keptIdx, ",")
	var b strings.Builder
	for i := 0; i < n; {
		j := i
		for j < n && versions[j] == versions[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(versions[i], 10))
		if j-i > 1 {
			b.WriteByte('*')
			b.WriteString(strconv.Itoa(j - i))
		}
		i = j
	}
	o.Versions = b.String()
	b.Reset()
	for i := 0; i < n; {
		j := i
		for j < n && secs[j] == secs[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d:%d", i, j-i, secs[i])
		i = j
	}
	o.Runs = b.String()
	return o
}

// stateLetter is a seat's status in the overview's state string.
func stateLetter(st store.SeatStatus) byte {
	switch st {
	case store.Available:
		return 'a'
	case store.Held:
		return 'h'
	case store.Sold:
		return 's'
	default:
		return 'b'
	}
}

// seatVM is a seat without a place on the grid: live frames and click
// answers replace a shown seat, which keeps its place (the page script
// carries it over), and the map places the seats it renders.
func seatVM(event uuid.UUID, st hold.SeatView, viewer uuid.UUID) views.Seat {
	return views.Seat{ID: st.ID.String(), EventID: event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Status: string(st.Status), Version: st.Version, Idx: st.Idx,
		Mine: st.Status == store.Held && st.HolderID == viewer && viewer != uuid.Nil, Cat: st.Cat, Flag: seatFlag(st.Seat)}
}

// seatFlag names a seat's accessibility flag for the map.
func seatFlag(st store.Seat) string {
	switch {
	case st.Accessible:
		return "accessible"
	case st.Companion:
		return "companion"
	}
	return ""
}

// Page is an event's seat map with the buyer's cart.
func (p *SeatMap) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, m, err := p.ofRequest(r, a)
	if err != nil {
		return err
	}
	c, err := p.cart.View(r.Context(), a, event)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.SeatMapPage(p.render.Meta(r, m.EventName), m, c))
	return nil
}

// Venue is the map alone, of the ?section= asked for (the section
// buttons fetch it).
func (p *SeatMap) Venue(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	_, m, err := p.ofRequest(r, a)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.Venue(m))
	return nil
}

// ofRequest builds the map of the {event} of the path, showing the
// ?section= asked for.
func (p *SeatMap) ofRequest(r *http.Request, a hold.Actor) (uuid.UUID, views.SeatMap, error) {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return event, views.SeatMap{}, err
	}
	m, err := p.build(r.Context(), a, event, r.URL.Query().Get("section"))
	return event, m, err
}

// gaPanel is the map's list of GA sections, and the seats without the GA
// places (which are counted, not drawn).
func (p *SeatMap) gaPanel(ctx context.Context, a hold.Actor, event uuid.UUID, seats []hold.SeatView) ([]views.GASection, []hold.SeatView, error) {
	secs, err := p.seats.GASections(ctx, a, event)
	if err != nil || len(secs) == 0 {
		return nil, seats, err
	}
	ga := map[string]bool{}
	out := make([]views.GASection, len(secs))
	for i, sec := range secs {
		ga[sec.Label] = true
		out[i] = views.GASection{ID: sec.ID.String(), Label: sec.Label, Name: sec.Name, Capacity: sec.Capacity, Left: sec.Left}
	}
	drawn := make([]hold.SeatView, 0, len(seats))
	for _, st := range seats {
		if !ga[st.Section] {
			drawn = append(drawn, st)
		}
	}
	return out, drawn, nil
}

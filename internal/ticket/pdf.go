package ticket

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// Booking is a booking's tickets as a PDF (and the pages and mail that
// show them) presents them: plain values that the caller fills from what
// it read, so the web pages and the mail share one shape and no store
// type leaks into drawing.
type Booking struct {
	Reference string // as people read it: XXXX-XXXX
	Holder    string // the buyer's or box-office customer's name; "" when not known
	Event     Event
	Tickets   []Ticket
	Total     string // the live tickets' prices summed, formatted; "" when free
}

// Event is what a ticket says of its event.
type Event struct {
	Name     string
	Venue    string
	StartsAt time.Time
	TimeZone string // the venue's IANA zone (events.time_zone): times are shown in it
}

// Ticket is one ticket of a booking.
type Ticket struct {
	Code     string // its signed code, drawn as the QR code
	Section  string // the section's name
	Row      string // "" for a standing place
	Seat     string // the seat's number; "" for a standing place
	Place    string // a standing place ("G place 94"); "" for a seat
	Category string // the category's name; "" without one
	Price    string // as the caller formats prices ("45.00 EUR"); "" for none
	// QR is Code drawn, when the caller has drawn it already (a mail
	// shows it inline too); nil: PDF draws it. Choosing among a QR
	// code's eight masks costs more than the rest of its page.
	QR *QR
}

// Where names the ticket's place: "Stalls · Row B · Seat 12", or the
// standing place.
func (t Ticket) Where() string {
	if t.Place != "" {
		return t.Place
	}
	parts := []string{t.Section}
	if t.Row != "" {
		parts = append(parts, "Row "+t.Row)
	}
	if t.Seat != "" {
		parts = append(parts, "Seat "+t.Seat)
	}
	return strings.Join(parts, " · ")
}

// When is the event's start in the venue's zone, with the zone named:
// "Saturday 13 June 2026, 19:30 (Europe/Paris)". An unknown zone shows
// UTC.
func (e Event) When() string {
	loc, err := time.LoadLocation(e.TimeZone)
	if err != nil || e.TimeZone == "" {
		loc = time.UTC
	}
	return e.StartsAt.In(loc).Format("Monday 2 January 2006, 15:04") + " (" + loc.String() + ")"
}

// The page: a third of A4 (210 × 99 mm), the size of a printed ticket
// and of a phone screen turned sideways; three fit an A4 sheet when
// printed "several pages per sheet".
const (
	pageW, pageH = 210.0, 99.0
	margin       = 8.0
	qrSide       = 70.0
	textW        = pageW - 3*margin - qrSide
)

// PDF draws a booking's tickets, one page each, with their QR codes.
// Text is set in the Go fonts (embedded, Latin, Greek and Cyrillic
// scripts), so names show as typed.
func PDF(b Booking) ([]byte, error) {
	if len(b.Tickets) == 0 {
		return nil, errors.New("pdf: a booking without tickets")
	}
	f := fpdf.NewCustom(&fpdf.InitType{OrientationStr: "P", UnitStr: "mm", Size: fpdf.SizeType{Wd: pageW, Ht: pageH}})
	f.AddUTF8FontFromBytes("go", "", goregular.TTF)
	f.AddUTF8FontFromBytes("go", "B", gobold.TTF)
	f.SetTitle("Tickets "+b.Reference+" – "+b.Event.Name, true)
	f.SetCreator("seatd", true)
	f.SetAutoPageBreak(false, 0)
	f.SetMargins(margin, margin, margin)
	for i, t := range b.Tickets {
		qr := t.QR
		if qr == nil {
			var err error
			if qr, err = NewQR(t.Code); err != nil {
				return nil, fmt.Errorf("pdf: ticket %d: %w", i+1, err)
			}
		}
		f.AddPage()
		drawTicket(f, b, t, i, qr)
	}
	var out bytes.Buffer
	if err := f.Output(&out); err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	return out.Bytes(), nil
}

func drawTicket(f *fpdf.Fpdf, b Booking, t Ticket, i int, qr *QR) {
	f.SetDrawColor(160, 160, 160)
	f.SetLineWidth(0.3)
	f.Rect(margin/2, margin/2, pageW-margin, pageH-margin, "D")

	x := margin
	line := func(style string, size, height float64, text string, maxLines int) {
		if text == "" {
			return
		}
		f.SetFont("go", style, size)
		lines := f.SplitText(text, textW)
		if len(lines) > maxLines {
			lines = lines[:maxLines]
			lines[maxLines-1] = strings.TrimRight(lines[maxLines-1], " ") + "…"
		}
		for _, l := range lines {
			f.SetX(x)
			f.CellFormat(textW, height, l, "", 1, "L", false, 0, "")
		}
	}
	f.SetXY(x, margin+2)
	f.SetTextColor(0, 0, 0)
	line("B", 16, 7, b.Event.Name, 2)
	f.SetTextColor(60, 60, 60)
	line("", 10.5, 5.5, b.Event.Venue, 1)
	line("", 10.5, 5.5, b.Event.When(), 2)
	f.SetY(f.GetY() + 3)
	f.SetTextColor(0, 0, 0)
	line("B", 14, 7, t.Where(), 2)
	line("", 10.5, 5.5, strings.Join(nonEmpty(t.Category, t.Price), " · "), 1)
	line("", 10.5, 5.5, b.Holder, 1)

	f.SetTextColor(90, 90, 90)
	f.SetFont("go", "", 9)
	f.SetXY(x, pageH-margin-6)
	f.CellFormat(textW, 5, "Booking "+b.Reference+" · ticket "+strconv.Itoa(i+1)+" of "+strconv.Itoa(len(b.Tickets)),
		"", 0, "L", false, 0, "")

	qx, qy := pageW-margin-qrSide, (pageH-qrSide)/2-3
	drawQR(f, qr, qx, qy, qrSide)
	f.SetXY(qx, qy+qrSide)
	f.CellFormat(qrSide, 5, "Show this code at the door", "", 0, "C", false, 0, "")
}

// drawQR draws the code as vectors in the square of side mm at (x, y):
// one filled path of a rectangle per run of dark modules, in module units
// (a transform maps them to the page), so a run costs a dozen bytes of the
// page's stream. Filled at once, the rectangles meet without the hairline
// seams that separately painted ones show at some zooms, and the code is
// sharp at any print size; drawing it costs a fraction of encoding a PNG
// that the PDF library would decode and compress again.
func drawQR(f *fpdf.Fpdf, q *QR, x, y, side float64) {
	k := f.GetConversionRatio() // points per mm
	_, h := f.GetPageSize()
	m := side / float64(q.Modules()) * k // a module, in points
	var b strings.Builder
	// The origin at the code's top-left corner, y downwards as on the
	// page; black inside q … Q, so the library's colour state holds.
	b.WriteString("q 0 g " + strconv.FormatFloat(m, 'f', 4, 64) + " 0 0 " + strconv.FormatFloat(-m, 'f', 4, 64) + " " +
		strconv.FormatFloat(x*k, 'f', 2, 64) + " " + strconv.FormatFloat((h-y)*k, 'f', 2, 64) + " cm\n")
	for _, r := range q.Runs() {
		b.WriteString(strconv.Itoa(r.X) + " " + strconv.Itoa(r.Y) + " " + strconv.Itoa(r.W) + " 1 re\n")
	}
	b.WriteString("f Q")
	f.RawWriteStr(b.String())
}

func nonEmpty(s ...string) []string {
	out := s[:0:0]
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

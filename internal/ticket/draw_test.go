package ticket_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"seatd/internal/ticket"
)

func sampleCode(t *testing.T) string {
	t.Helper()
	_, priv := newKey(t)
	return ticket.Sign(priv, ticket.Claims{Org: uuid.New(), Event: uuid.New(), Ticket: uuid.New(), Seat: uuid.New()})
}

// decodeQR reads the QR code of a PNG back to its text.
func decodeQR(t *testing.T, b []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("decode the QR code: %v", err)
	}
	return res.GetText()
}

// TestQR: a code's QR code, as a PNG or a data: URL, decodes back to the
// code; the SVG is one path on a white square with the quiet zone.
func TestQR(t *testing.T) {
	t.Parallel()
	code := sampleCode(t)
	qr, err := ticket.NewQR(code)
	if err != nil {
		t.Fatal(err)
	}
	if qr.Modules() != 49+8 {
		t.Errorf("%d modules a side, want version 8 (49) and the quiet zone (8)", qr.Modules())
	}
	b, err := qr.PNG(4)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeQR(t, b); got != code {
		t.Fatalf("PNG decodes to %q, want %q", got, code)
	}
	url, err := qr.DataURL(3)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/png;base64,"))
	if err != nil || !strings.HasPrefix(url, "data:image/png;base64,") {
		t.Fatalf("data URL %.40q: %v", url, err)
	}
	if got := decodeQR(t, raw); got != code {
		t.Fatalf("data URL decodes to %q", got)
	}
	svg := qr.SVG()
	for _, want := range []string{`viewBox="0 0 57 57"`, `<rect width="57" height="57" fill="#fff"/>`, `<path fill="#000" d="M4 4h7v1h-7z`} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q: %.200s", want, svg)
		}
	}
	if strings.Contains(svg, "<script") || strings.Contains(svg, "style=") {
		t.Errorf("SVG has script or style: %.200s", svg)
	}
}

// TestPDF: a booking's PDF is a PDF with one page per ticket, each with
// the ticket's QR code drawn as vectors that decode back to its code;
// times are in the venue's zone.
func TestPDF(t *testing.T) {
	t.Parallel()
	b := ticket.Booking{
		Reference: "ABCD-EFGH",
		Holder:    "Zoë Łukasiewicz",
		Event: ticket.Event{Name: "Ünïcode Night: a long name that has to wrap over two lines of the ticket, or be cut short",
			Venue: "Salle Pleyel", StartsAt: time.Date(2026, 6, 13, 17, 30, 0, 0, time.UTC), TimeZone: "Europe/Paris"},
		Tickets: []ticket.Ticket{
			{Code: sampleCode(t), Section: "Stalls", Row: "B", Seat: "12", Category: "Front", Price: "45.00 EUR"},
			{Code: sampleCode(t), Section: "Stalls", Row: "B", Seat: "13", Category: "Front", Price: "45.00 EUR"},
			{Code: sampleCode(t), Place: "G place 94", Category: "Standing"},
		},
	}
	// The second ticket's code is drawn already, as a mail does.
	qr, err := ticket.NewQR(b.Tickets[1].Code)
	if err != nil {
		t.Fatal(err)
	}
	b.Tickets[1].QR = qr
	pdf, err := ticket.PDF(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Fatalf("not a PDF: %.20q", pdf)
	}
	pages := regexp.MustCompile(`/Type /Page\b[^s]`).FindAll(pdf, -1)
	if len(pages) != 3 {
		t.Fatalf("%d pages, want 3", len(pages))
	}
	codes := pdfQRCodes(t, pdf)
	if len(codes) != len(b.Tickets) {
		t.Fatalf("%d QR codes drawn, want %d", len(codes), len(b.Tickets))
	}
	for i, tk := range b.Tickets {
		if codes[i] != tk.Code {
			t.Errorf("page %d's QR code decodes to %.30q…, want ticket %d's code", i+1, codes[i], i+1)
		}
	}
	if !bytes.Contains(pdf, []byte("/Count 3")) {
		t.Error("the page tree does not count 3 pages")
	}
	if _, err := ticket.PDF(ticket.Booking{}); err == nil {
		t.Error("a PDF of no tickets")
	}

	if got, want := b.Event.When(), "Saturday 13 June 2026, 19:30 (Europe/Paris)"; got != want {
		t.Errorf("When %q, want %q", got, want)
	}
	if got, want := (ticket.Event{StartsAt: b.Event.StartsAt, TimeZone: "Nowhere/Else"}).When(), "Saturday 13 June 2026, 17:30 (UTC)"; got != want {
		t.Errorf("When with an unknown zone %q, want %q", got, want)
	}
	if got := b.Tickets[0].Where(); got != "Stalls · Row B · Seat 12" {
		t.Errorf("Where %q", got)
	}
	if got := b.Tickets[2].Where(); got != "G place 94" {
		t.Errorf("Where of a standing place %q", got)
	}
}

// pdfQRCodes reads back the QR codes a PDF's pages draw as filled paths
// (drawQR's rectangles, one subpath of four corners a run), rasterized
// and decoded, in page order.
func pdfQRCodes(t *testing.T, pdf []byte) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`(?s)stream\r?\n(.*?)\r?\nendstream`).FindAllSubmatch(pdf, -1) {
		zr, err := zlib.NewReader(bytes.NewReader(m[1]))
		if err != nil {
			continue
		}
		content, err := io.ReadAll(zr)
		if err != nil || !bytes.Contains(content, []byte("BT")) {
			continue // a font, not a page
		}
		type rect struct{ x0, y0, x1, y1 float64 }
		var rects []rect
		var pts [][2]float64
		for _, line := range strings.Split(string(content), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && (f[2] == "m" || f[2] == "l"):
				x, err1 := strconv.ParseFloat(f[0], 64)
				y, err2 := strconv.ParseFloat(f[1], 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("path point %q", line)
				}
				if f[2] == "m" {
					pts = pts[:0]
				}
				pts = append(pts, [2]float64{x, y})
			case len(f) == 1 && f[0] == "h":
				if len(pts) != 4 {
					t.Fatalf("a subpath of %d points, want a rectangle's 4", len(pts))
				}
				r := rect{pts[0][0], pts[0][1], pts[0][0], pts[0][1]}
				for _, p := range pts[1:] {
					r.x0, r.x1 = min(r.x0, p[0]), max(r.x1, p[0])
					r.y0, r.y1 = min(r.y0, p[1]), max(r.y1, p[1])
				}
				rects = append(rects, r)
			}
		}
		if len(rects) == 0 {
			continue
		}
		// The finder pattern's corner is the top-left dark module, four
		// modules in from the code's corner (the quiet zone); PDF's y
		// grows upwards.
		left, top, module := rects[0].x0, rects[0].y1, rects[0].y1-rects[0].y0
		for _, r := range rects {
			left, top, module = min(left, r.x0), max(top, r.y1), min(module, r.y1-r.y0)
		}
		const scale, n = 4, 57
		img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
		for i := range img.Pix {
			img.Pix[i] = 0xff
		}
		for _, r := range rects {
			c0, c1 := 4+int(math.Round((r.x0-left)/module)), 4+int(math.Round((r.x1-left)/module))
			row := 4 + int(math.Round((top-r.y1)/module))
			for y := row * scale; y < (row+1)*scale; y++ {
				for x := c0 * scale; x < c1*scale; x++ {
					img.SetGray(x, y, color.Gray{})
				}
			}
		}
		var raster bytes.Buffer
		if err := png.Encode(&raster, img); err != nil {
			t.Fatal(err)
		}
		out = append(out, decodeQR(t, raster.Bytes()))
	}
	return out
}

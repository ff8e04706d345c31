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

// pdfQRCodes reads back the QR codes a PDF's pages draw (drawQR's
// rectangles in module units, under a transform that must make the code
// 70 mm a side), rasterized and decoded, in page order.
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
		const scale, n = 4, 57
		img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
		for i := range img.Pix {
			img.Pix[i] = 0xff
		}
		runs, size := 0, 0.0
		for _, line := range strings.Split(string(content), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 10 && f[9] == "cm":
				module, err := strconv.ParseFloat(f[3], 64)
				if err != nil {
					t.Fatalf("transform %q", line)
				}
				size = module * n * 25.4 / 72 // in mm
			case len(f) == 5 && f[4] == "re":
				var v [4]int
				for i := range v {
					if v[i], err = strconv.Atoi(f[i]); err != nil {
						t.Fatalf("rectangle %q", line)
					}
				}
				if v[3] != 1 || v[0] < 0 || v[0]+v[2] > n || v[1] < 0 || v[1] >= n {
					t.Fatalf("rectangle %q is not a run of one row of the code", line)
				}
				runs++
				for y := v[1] * scale; y < (v[1]+1)*scale; y++ {
					for x := v[0] * scale; x < (v[0]+v[2])*scale; x++ {
						img.SetGray(x, y, color.Gray{})
					}
				}
			}
		}
		if runs == 0 {
			continue
		}
		if math.Abs(size-70) > 0.1 {
			t.Errorf("the QR code is drawn %.1f mm a side, want 70", size)
		}
		var raster bytes.Buffer
		if err := png.Encode(&raster, img); err != nil {
			t.Fatal(err)
		}
		out = append(out, decodeQR(t, raster.Bytes()))
	}
	return out
}

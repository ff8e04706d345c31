package ticket

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// quietZone is the white border the QR specification asks for, in
// modules: without it phone cameras miss codes shown on a dark page.
const quietZone = 4

// QR is a code drawn as a QR code.
type QR struct {
	size int      // modules per side, quiet zone included
	dark [][]bool // [y][x], quiet zone included
}

// NewQR encodes text (a ticket code) as a QR code in byte mode with
// error correction level M (15 %): a 151-character code fits version 8,
// 49 modules a side, whose modules stay large enough for a phone camera
// at a small print size; level Q would need version 10.
func NewQR(text string) (*QR, error) {
	q, err := qrcode.NewWith(text, qrcode.WithEncodingMode(qrcode.EncModeByte),
		qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("qr: %w", err)
	}
	var m matrixCopy
	if err := q.Save(&m); err != nil {
		return nil, fmt.Errorf("qr: %w", err)
	}
	return m.qr, nil
}

// matrixCopy is a qrcode.Writer that keeps the module matrix.
type matrixCopy struct{ qr *QR }

func (w *matrixCopy) Write(mat qrcode.Matrix) error {
	size := mat.Width() + 2*quietZone
	q := &QR{size: size, dark: make([][]bool, size)}
	for y := range q.dark {
		q.dark[y] = make([]bool, size)
	}
	mat.Iterate(qrcode.IterDirection_ROW, func(x, y int, v qrcode.QRValue) {
		q.dark[y+quietZone][x+quietZone] = v.IsSet()
	})
	w.qr = q
	return nil
}

func (w *matrixCopy) Close() error { return nil }

// Modules is the number of modules per side, quiet zone included.
func (q *QR) Modules() int { return q.size }

// Image draws the code with scale pixels per module: black on white, two
// colours.
func (q *QR) Image(scale int) image.Image {
	scale = max(scale, 1)
	img := image.NewPaletted(image.Rect(0, 0, q.size*scale, q.size*scale), color.Palette{color.White, color.Black})
	for y, row := range q.dark {
		for x, dark := range row {
			if !dark {
				continue
			}
			for dy := range scale {
				off := img.PixOffset(x*scale, y*scale+dy)
				for dx := range scale {
					img.Pix[off+dx] = 1
				}
			}
		}
	}
	return img
}

// PNG draws the code as a PNG with scale pixels per module (for mail and
// PDFs; 8 gives 456 pixels a side, a few kilobytes).
func (q *QR) PNG(scale int) ([]byte, error) {
	var b bytes.Buffer
	if err := png.Encode(&b, q.Image(scale)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DataURL is the PNG as a data: URL, for an <img> of a page (the
// Content-Security-Policy's img-src allows data:) or of a mail.
func (q *QR) DataURL(scale int) (string, error) {
	b, err := q.PNG(scale)
	if err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b), nil
}

// Run is a run of dark modules in one row: row Y, columns X to X+W-1,
// counted with the quiet zone.
type Run struct{ X, Y, W int }

// Runs lists the code's dark modules as runs, row by row: what the SVG
// and the PDF draw, one rectangle a run.
func (q *QR) Runs() []Run {
	var out []Run
	for y, row := range q.dark {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			w := 1
			for x+w < len(row) && row[x+w] {
				w++
			}
			out = append(out, Run{X: x, Y: y, W: w})
			x += w
		}
	}
	return out
}

// SVG draws the code as a standalone SVG that scales to its box: one
// path, a rectangle per run of dark modules in a row. It has no script or
// style (presentation attributes only), so a page may inline it under the
// Content-Security-Policy.
func (q *QR) SVG() string {
	var b strings.Builder
	n := strconv.Itoa(q.size)
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + n + ` ` + n + `" shape-rendering="crispEdges" role="img" aria-label="QR code">`)
	b.WriteString(`<rect width="` + n + `" height="` + n + `" fill="#fff"/><path fill="#000" d="`)
	for _, r := range q.Runs() {
		b.WriteString("M" + strconv.Itoa(r.X) + " " + strconv.Itoa(r.Y) + "h" + strconv.Itoa(r.W) + "v1h-" + strconv.Itoa(r.W) + "z")
	}
	b.WriteString(`"/></svg>`)
	return b.String()
}

package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"seatd/internal/testenv"
)

// TestCompression: a seat map page asked for with Accept-Encoding gzip (or
// zstd) comes compressed, says so in Content-Encoding and Vary, keeps
// no-store, and decodes to the very page sent uncompressed; the static CSS
// keeps its immutable cache and is compressed once (its body is gzip, not
// gzip of gzip); a client that asks for nothing gets plain bytes.
func TestCompression(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 2, 10, 20)
	buyer := s.as(tn.Org, tn.Buyers[0])
	path := "/e/" + ev.ID.String()

	plain := buyer.do("GET", path, nil, "Accept-Encoding", "identity").want(t, http.StatusOK)
	if ce := plain.header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("identity asked, got Content-Encoding %q", ce)
	}
	gz := buyer.do("GET", path, nil, "Accept-Encoding", "gzip").want(t, http.StatusOK)
	if ce := gz.header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("gzip asked, got Content-Encoding %q", ce)
	}
	if v := gz.header.Values("Vary"); !slices.ContainsFunc(v, func(h string) bool { return strings.Contains(h, "Accept-Encoding") }) {
		t.Errorf("Vary %q, want Accept-Encoding", v)
	}
	if got := gz.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("compressed page: Cache-Control %q, want no-store", got)
	}
	dec, err := gunzip(gz.body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dec, plain.body) {
		t.Fatalf("gzip page decodes to %d bytes, plain page is %d bytes and differs", len(dec), len(plain.body))
	}

	zs := buyer.do("GET", path, nil, "Accept-Encoding", "zstd").want(t, http.StatusOK)
	if ce := zs.header.Get("Content-Encoding"); ce != "zstd" {
		t.Fatalf("zstd asked, got Content-Encoding %q", ce)
	}
	zd, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zd.Close()
	zdec, err := zd.DecodeAll(zs.body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(zdec, plain.body) {
		t.Fatal("zstd page does not decode to the plain page")
	}

	css := s.srv.assets.Path("css/app.css")
	cp := buyer.do("GET", css, nil, "Accept-Encoding", "identity").want(t, http.StatusOK)
	cg := buyer.do("GET", css, nil, "Accept-Encoding", "gzip").want(t, http.StatusOK)
	if cg.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("CSS with gzip asked: Content-Encoding %q", cg.header.Get("Content-Encoding"))
	}
	if got := cg.header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
		t.Errorf("compressed CSS: Cache-Control %q, want the immutable cache", got)
	}
	cdec, err := gunzip(cg.body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cdec, cp.body) {
		t.Fatal("compressed CSS does not decode (once) to the plain CSS")
	}
	t.Logf("%d-seat map page: %d bytes plain, %d gzip (%.1fx), %d zstd; CSS %d -> %d gzip",
		400, len(plain.body), len(gz.body), float64(len(plain.body))/float64(len(gz.body)), len(zs.body), len(cp.body), len(cg.body))
}

// TestCompressionJSONAndSocket: a JSON answer asked for with gzip comes
// gzip-encoded and decodes to the plain answer, and the seat map's socket,
// dialled with the Accept-Encoding browsers send on the upgrade too, is
// upgraded untouched by the compressor and carries a live frame.
func TestCompressionJSONAndSocket(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 2, 5, 10)
	buyer := s.as(tn.Org, tn.Buyers[0])
	path := "/api/v1/events/" + ev.ID.String() + "/seats"

	plain := buyer.do("GET", path, nil, "Accept-Encoding", "identity").want(t, http.StatusOK)
	gz := buyer.do("GET", path, nil, "Accept-Encoding", "gzip").want(t, http.StatusOK)
	if ce := gz.header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("JSON with gzip asked: Content-Encoding %q", ce)
	}
	if ct := gz.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("compressed JSON: Content-Type %q", ct)
	}
	dec, err := gunzip(gz.body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dec, plain.body) {
		t.Fatalf("gzip JSON decodes to %d bytes, the plain answer is %d and differs", len(dec), len(plain.body))
	}

	conn, resp, err := s.dialAs(t, buyer, ev.ID, "Accept-Encoding", "gzip, deflate, br, zstd")
	if err != nil {
		t.Fatalf("socket through the compressor: %v", err)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("upgrade answered with Content-Encoding %q", ce)
	}
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[7]
	coreHold(t, s.app, tn.Buyers[1], ev.ID, seat)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("no frame for the held seat: %v", err)
		}
		if bytes.Contains(msg, []byte(`id="seat-`+seat.String()+`"`)) && bytes.Contains(msg, []byte(`data-status="held"`)) {
			t.Logf("JSON %d bytes plain, %d gzip; frame %d bytes", len(plain.body), len(gz.body), len(msg))
			return
		}
	}
}

// gunzip decodes a gzip body.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

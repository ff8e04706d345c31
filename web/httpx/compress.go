package httpx

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
)

// Compress encodes every answer with zstd or gzip when the client asks for
// it (Accept-Encoding), using gzhttp: it negotiates, sets Vary, skips small
// bodies (under 1 KiB a header costs more than it saves), bodies that
// already carry a Content-Encoding and types that are compressed already
// (images, archives), and passes Hijack through, so WebSocket upgrades are
// untouched. Cache-Control set by the handler stays as it is; an ETag gets
// the encoding as suffix, so a cache never mixes a compressed and a plain
// copy under one validator.
//
// The seat map page is the reason: 2 850 seats are ~1.1 MB of HTML, nearly
// all repeated markup. Pages carry no secret a request can reflect next to
// (no CSRF token: cross-site writes are refused by Sec-Fetch-Site/Origin),
// so compression gives BREACH nothing to guess.
func Compress(next http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.MinSize(1024),
		gzhttp.SuffixETag("-gzip"),
		// The fastest levels: the map is mostly the same few hundred bytes
		// repeated, which the fastest settings already compress ~10x, at a
		// fraction of the CPU of the default levels.
		gzhttp.CompressionLevel(1),
	)
	if err != nil {
		// Fixed, valid options: an error is a programming error.
		panic(err)
	}
	return wrap(next)
}

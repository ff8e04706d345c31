package httpx

import (
	"net/http"
	"strings"

	"seatd/internal/apperr"
)

// RouteInfo serves mux, recording the matched pattern for the request log
// (the mux sets r.Pattern on the request it is given, so it is read after
// routing), and makes the mux's own 404 and 405 answers under /api/ JSON
// errors.
func RouteInfo(errs *Errors, mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if info := infoOf(r.Context()); info != nil {
				info.pattern = r.Pattern
			}
		}()
		if strings.HasPrefix(r.URL.Path, "/api/") {
			if _, pattern := mux.Handler(r); pattern == "" {
				w = &muxErrorWriter{ResponseWriter: w, errs: errs, r: r}
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// muxErrorWriter turns the mux's plain-text 404 and 405 into JSON errors.
type muxErrorWriter struct {
	http.ResponseWriter
	errs    *Errors
	r       *http.Request
	swallow bool
}

func (w *muxErrorWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		w.swallow = true
		w.errs.Write(w.ResponseWriter, w.r, apperr.E(apperr.NotFound, "no such API route"))
	case http.StatusMethodNotAllowed:
		w.swallow = true
		w.errs.Write(w.ResponseWriter, w.r, apperr.E(codeMethodNotAllowed, "this route does not take %s", w.r.Method))
	default:
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *muxErrorWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *muxErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

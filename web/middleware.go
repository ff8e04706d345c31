package web

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"seatd/internal/apperr"
	"seatd/internal/hold"
)

// reqInfo collects what the request log line needs from deeper layers:
// the mux's pattern, the session's org, the error code answered.
type reqInfo struct {
	pattern string
	org     uuid.UUID
	code    apperr.Code
}

type infoKey struct{}

func infoOf(ctx context.Context) *reqInfo {
	i, _ := ctx.Value(infoKey{}).(*reqInfo)
	return i
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// httpMetrics are the web layer's Prometheus metrics.
type httpMetrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_http_requests_total", Help: "HTTP requests answered, by route pattern and status."},
			[]string{"pattern", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seatd_http_request_duration_seconds", Help: "Time to answer an HTTP request, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}},
			[]string{"pattern"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_http_rate_limited_total", Help: "Requests refused by a rate limit, by limit."},
			[]string{"limit"}),
	}
	m.requests = register(reg, m.requests)
	m.duration = register(reg, m.duration)
	m.rateLimited = register(reg, m.rateLimited)
	return m
}

// register registers c, or returns the collector registered before it
// (a second server on the same app shares the metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
		panic(err)
	}
	return c
}

// observe is the outermost middleware: it recovers panics into a 500 JSON
// error and logs one line per request.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path,
					"panic", p, "stack", string(debug.Stack()))
				info.code = apperr.Internal
				if sw.status == 0 {
					writeJSON(sw, http.StatusInternalServerError,
						errorBody{Error: apperr.Internal, Message: internalMessage, Fields: map[string]string{}})
				}
			}
			s.logRequest(r, info, sw, time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

func (s *Server) logRequest(r *http.Request, info *reqInfo, sw *statusWriter, d time.Duration) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	pattern := info.pattern
	if pattern == "" {
		pattern = "unmatched"
	}
	s.metrics.requests.WithLabelValues(pattern, strconv.Itoa(status)).Inc()
	s.metrics.duration.WithLabelValues(pattern).Observe(d.Seconds())

	level := slog.LevelInfo
	switch pattern {
	case "GET /healthz", "GET /readyz":
		level = slog.LevelDebug // probes would drown the log
	}
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("pattern", pattern),
		slog.Int("status", status),
		slog.Duration("duration", d),
		slog.Int64("bytes", sw.bytes),
	}
	if info.org != uuid.Nil {
		attrs = append(attrs, slog.String("org", info.org.String()))
	}
	if info.code != "" {
		attrs = append(attrs, slog.String("error", string(info.code)))
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// contentSecurityPolicy allows only this origin's scripts, styles and
// connections; no inline script anywhere.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// securityHeaders sets the headers every response carries.
func (s *Server) securityHeaders(next http.Handler) http.Handler {
	fixed := http.Header{
		"Content-Security-Policy":    {contentSecurityPolicy},
		"X-Content-Type-Options":     {"nosniff"},
		"Referrer-Policy":            {"same-origin"},
		"X-Frame-Options":            {"DENY"},
		"Cross-Origin-Opener-Policy": {"same-origin"},
		// Pages and answers carry tenants' data (holders' emails,
		// bookings): no browser history or shared cache keeps them. The
		// checksummed static assets set their own long cache over this.
		"Cache-Control": {"no-store"},
	}
	if s.deps.Cfg.CookieSecure {
		fixed["Strict-Transport-Security"] = []string{"max-age=31536000; includeSubDomains"}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setFixed(w.Header(), fixed)
		next.ServeHTTP(w, r)
	})
}

// setFixed sets headers whose names are canonical and whose values never
// change, sharing their value slices rather than allocating one per
// header and request as Header.Set does (every answer carries them).
// Sharing is safe: Set and Del replace a slice, Add appends to a full one
// (which copies it), and nothing writes into a header's values in place.
func setFixed(h, fixed http.Header) {
	for k, v := range fixed {
		h[k] = v[:len(v):len(v)]
	}
}

// crossOrigin refuses cross-site state-changing browser requests. Requests
// without Sec-Fetch-Site and Origin (curl, API clients) pass: they carry no
// ambient browser credentials to abuse. Nor do API-key requests (see
// bearerKey), which never use the session cookie.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, apperr.E(apperr.Forbidden, "cross-site requests are refused"))
	}))
	protected := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := bearerKey(r); ok {
			next.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// routeInfo records the matched pattern for the request log (the mux sets
// r.Pattern on the request it is given, so it is read after routing), and
// makes the mux's own 404 and 405 answers under /api/ JSON errors.
func (s *Server) routeInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if info := infoOf(r.Context()); info != nil {
				info.pattern = r.Pattern
			}
		}()
		if strings.HasPrefix(r.URL.Path, "/api/") {
			if _, pattern := s.mux.Handler(r); pattern == "" {
				w = &muxErrorWriter{ResponseWriter: w, s: s, r: r}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// muxErrorWriter turns the mux's plain-text 404 and 405 into JSON errors.
type muxErrorWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	swallow bool
}

func (w *muxErrorWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		w.swallow = true
		w.s.writeError(w.ResponseWriter, w.r, apperr.E(apperr.NotFound, "no such API route"))
	case http.StatusMethodNotAllowed:
		w.swallow = true
		w.s.writeError(w.ResponseWriter, w.r, apperr.E(codeMethodNotAllowed, "this route does not take %s", w.r.Method))
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

// roles is a set of roles allowed on a route.
type roles uint8

const (
	buyer roles = 1 << iota
	boxOffice
	organizer

	staff    = boxOffice | organizer
	anyRole  = buyer | staff
	noRole   = roles(0)
	roleMask = anyRole
)

func roleBit(role hold.Role) roles {
	switch role {
	case hold.RoleBuyer:
		return buyer
	case hold.RoleBoxOffice:
		return boxOffice
	case hold.RoleOrganizer:
		return organizer
	}
	return noRole
}

// apiHandler handles a request of a signed-in user; the actor comes from
// the session, never from the request.
type apiHandler func(w http.ResponseWriter, r *http.Request, a hold.Actor) error

// authed lets through signed-in users whose role is in allowed: 401
// without a session, 403 with another role.
func (s *Server) authed(allowed roles, h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := actorFrom(r.Context())
		if !ok {
			s.writeError(w, r, apperr.E(apperr.Unauthorized, "sign in first"))
			return
		}
		if roleBit(a.Role)&allowed&roleMask == 0 {
			s.writeError(w, r, apperr.E(apperr.Forbidden, "your account cannot do this"))
			return
		}
		if err := h(w, r, a); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// public handles a request that needs no session.
func (s *Server) public(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

func unavailable(msg string) error { return apperr.E(apperr.Unavailable, "%s", msg) }

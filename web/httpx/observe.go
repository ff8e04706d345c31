package httpx

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"seatd/internal/apperr"
	"seatd/internal/telemetry"
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

// NoteOrg records the organization a request acts for, for its log line.
func NoteOrg(ctx context.Context, org uuid.UUID) {
	if info := infoOf(ctx); info != nil {
		info.org = org
	}
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

// httpMetrics are the request metrics Observe keeps.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
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
	}
	m.requests = telemetry.Register(reg, m.requests)
	m.duration = telemetry.Register(reg, m.duration)
	return m
}

// Observe is the outermost middleware: it recovers panics into a 500 JSON
// error, and logs one line per request to log and counts it in metrics
// registered on reg.
func Observe(log *slog.Logger, reg prometheus.Registerer, next http.Handler) http.Handler {
	o := &observer{log: log, metrics: newHTTPMetrics(reg)}
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
				o.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path,
					"panic", p, "stack", string(debug.Stack()))
				info.code = apperr.Internal
				if sw.status == 0 {
					WriteJSON(sw, http.StatusInternalServerError,
						ErrorBody{Error: apperr.Internal, Message: InternalMessage, Fields: map[string]string{}})
				}
			}
			o.logRequest(r, info, sw, time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

// observer logs and counts requests.
type observer struct {
	log     *slog.Logger
	metrics *httpMetrics
}

func (o *observer) logRequest(r *http.Request, info *reqInfo, sw *statusWriter, d time.Duration) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	pattern := info.pattern
	if pattern == "" {
		pattern = "unmatched"
	}
	o.metrics.requests.WithLabelValues(pattern, strconv.Itoa(status)).Inc()
	o.metrics.duration.WithLabelValues(pattern).Observe(d.Seconds())

	level := slog.LevelInfo
	switch pattern {
	case "GET /healthz", "GET /readyz":
		level = slog.LevelDebug // probes would drown the log
	}
	if !o.log.Enabled(r.Context(), level) {
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
	o.log.LogAttrs(r.Context(), level, "request", attrs...)
}

package live

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// propagationBuckets bound the commit → frame latency; 0.15 s is the
// promise to buyers (a change is on every open map within 150 ms).
var propagationBuckets = []float64{.005, .01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5, 5}

// hubMetrics are the hub's own counters. The per-event series
// (propagation, sockets, queues) live on the topics instead, so they
// exist exactly as long as some socket of this process watches the event:
// a topic ends with its last socket and its series leave /metrics with
// it. The number of per-event label sets is therefore at most the number
// of events with an open socket here, which Options.MaxClients caps.
type hubMetrics struct {
	sent    [numStreams]prometheus.Counter
	dropped [numStreams]prometheus.Counter
	// lineRenders and lineErrors count the waitlist panels' renders (one
	// query each) and those that failed.
	lineRenders, lineErrors prometheus.Counter

	sockets, watches, slow, refused *prometheus.Desc
	eventSockets, pending, queued   *prometheus.Desc
}

func newHubMetrics() *hubMetrics {
	m := &hubMetrics{
		sockets: prometheus.NewDesc("seatd_live_sockets", "Open WebSockets in this process, by stream.", []string{"stream"}, nil),
		watches: prometheus.NewDesc("seatd_live_watches", "Events this process's hub watches (events with an open socket here).", nil, nil),
		slow: prometheus.NewDesc("seatd_live_slow_disconnects_total",
			"Sockets closed because the client could not keep up (its send queue was full).", nil, nil),
		refused: prometheus.NewDesc("seatd_live_sockets_refused_total",
			"Sockets refused for a cap (SEATD_MAX_SOCKETS, SEATD_MAX_SOCKETS_PER_SESSION).", nil, nil),
		eventSockets: prometheus.NewDesc("seatd_live_event_sockets",
			"Open WebSockets of an event in this process (series exist while the event has one).", []string{"org", "event"}, nil),
		pending: prometheus.NewDesc("seatd_live_pending_changes",
			"Seat changes of an event waiting to be rendered (at most one per seat).", []string{"org", "event"}, nil),
		queued: prometheus.NewDesc("seatd_live_queue_frames_max",
			"Frames waiting in the fullest send queue of an event's sockets; a full queue drops the socket.", []string{"org", "event"}, nil),
	}
	m.lineRenders = prometheus.NewCounter(prometheus.CounterOpts{Name: "seatd_live_waitlist_renders_total",
		Help: "Renders of buyers' waitlist panels after changes of an event's line (one query each, for every buyer connected here whose panel may have changed)."})
	m.lineErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "seatd_live_waitlist_render_errors_total",
		Help: "Waitlist panel renders that failed (tried again after a second)."})
	for s := StreamSeats; s < numStreams; s++ {
		l := prometheus.Labels{"stream": s.String()}
		m.sent[s] = prometheus.NewCounter(prometheus.CounterOpts{Name: "seatd_live_frames_sent_total",
			Help: "Frames written to WebSockets, by stream.", ConstLabels: l})
		m.dropped[s] = prometheus.NewCounter(prometheus.CounterOpts{Name: "seatd_live_frames_dropped_total",
			Help: "Frames not sent because the socket's queue was full (the socket is then dropped), by stream.", ConstLabels: l})
	}
	return m
}

// newPropagation is a topic's commit → frame histogram.
func newPropagation(key topicKey) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "seatd_live_propagation_seconds",
		Help: "Time from a seat change's commit (Delta.At, set where it committed) to its seat-map frame being written to a socket, " +
			"measured for the oldest change in each frame; changes the follower found (lost deltas) count from when they were found.",
		Buckets:     propagationBuckets,
		ConstLabels: prometheus.Labels{"org": key.org.String(), "event": key.event.String()},
	})
}

var _ prometheus.Collector = (*Hub)(nil)

// Describe implements prometheus.Collector. The hub is an unchecked
// collector: its per-event series come and go with its topics.
func (h *Hub) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: the hub's counters, its
// sockets by stream, and the per-event series of every live topic.
func (h *Hub) Collect(ch chan<- prometheus.Metric) {
	m := h.metrics
	for s := StreamSeats; s < numStreams; s++ {
		ch <- m.sent[s]
		ch <- m.dropped[s]
	}
	ch <- m.lineRenders
	ch <- m.lineErrors
	ch <- prometheus.MustNewConstMetric(m.slow, prometheus.CounterValue, float64(h.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(m.refused, prometheus.CounterValue, float64(h.refused.Load()))
	ch <- prometheus.MustNewConstMetric(m.watches, prometheus.GaugeValue, float64(h.watches.Load()))

	h.mu.Lock()
	topics := make([]*topic, 0, len(h.topics))
	for _, t := range h.topics {
		topics = append(topics, t)
	}
	h.mu.Unlock()
	var streams [numStreams]int
	for _, t := range topics {
		org, event := t.key.org.String(), t.key.event.String()
		t.mu.Lock()
		n := len(t.clients)
		for s := range streams {
			streams[s] += t.streams[s]
		}
		deepest := 0
		for c := range t.clients {
			deepest = max(deepest, len(c.send))
		}
		t.mu.Unlock()
		t.pmu.Lock()
		pending := len(t.pending.order)
		t.pmu.Unlock()
		if n == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.eventSockets, prometheus.GaugeValue, float64(n), org, event)
		ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(pending), org, event)
		ch <- prometheus.MustNewConstMetric(m.queued, prometheus.GaugeValue, float64(deepest), org, event)
		ch <- t.latency
	}
	for s := StreamSeats; s < numStreams; s++ {
		ch <- prometheus.MustNewConstMetric(m.sockets, prometheus.GaugeValue, float64(streams[s]), s.String())
	}
}

// queued is a frame in a client's send queue, with the commit time of
// the oldest change it carries (zero when not measured: staff frames,
// which are batched on purpose).
type queued struct {
	f  frame
	at time.Time
}

// sent records a frame written to c.
func (h *Hub) sent(c *client, q queued) {
	h.metrics.sent[c.v.Stream].Inc()
	if !q.at.IsZero() && c.topic != nil {
		c.topic.latency.Observe(max(time.Since(q.at).Seconds(), 0))
	}
}

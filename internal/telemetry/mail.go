package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Mail is the mail worker's metrics.
type Mail struct {
	// Attempts counts send attempts by outcome: sent, retry (failed,
	// tried again later), given_up.
	Attempts *prometheus.CounterVec
	// Latency is the time from a message's enqueue (its transaction) to
	// the SMTP server's acceptance, for messages sent.
	Latency prometheus.Histogram
}

// MailQueue is what the outbox holds when scraped: messages queued (sent
// neither yet nor given up; in backoff too) and the age of the oldest.
type MailQueue struct {
	Depth  int
	Oldest time.Duration
}

// NewMail creates the mail metrics and registers them on reg; queue reads
// the outbox once per scrape (ok false when it cannot: the gauges are then
// left out of that scrape rather than reported as an empty queue).
func NewMail(reg prometheus.Registerer, queue func() (q MailQueue, ok bool)) *Mail {
	m := &Mail{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_mail_attempts_total", Help: "Mail send attempts, by outcome (sent, retry, given_up)."},
			[]string{"outcome"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_mail_latency_seconds", Help: "Time from a message's enqueue to its acceptance by the SMTP server.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600}}),
	}
	// Every outcome is exported from the start, at 0, so the first
	// message given up is an increase (SeatdMailGivenUp).
	for _, o := range []string{"sent", "retry", "given_up"} {
		m.Attempts.WithLabelValues(o)
	}
	reg.MustRegister(m.Attempts, m.Latency, &mailQueue{read: queue,
		depth: prometheus.NewDesc("seatd_mail_queue_depth", "Mail messages queued: not sent yet and not given up (those in backoff too).", nil, nil),
		oldest: prometheus.NewDesc("seatd_mail_oldest_queued_age_seconds",
			"Age of the oldest queued mail message (0 when none); it grows while mail is not going out.", nil, nil)})
	return m
}

// mailQueue reports both queue gauges from one read of the outbox.
type mailQueue struct {
	read          func() (MailQueue, bool)
	depth, oldest *prometheus.Desc
}

func (c *mailQueue) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.oldest }

func (c *mailQueue) Collect(ch chan<- prometheus.Metric) {
	q, ok := c.read()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(q.Depth))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, q.Oldest.Seconds())
}

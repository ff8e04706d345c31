package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Webhooks are the delivery worker's metrics.
type Webhooks struct {
	// Attempts counts send attempts by outcome: delivered, retry (failed,
	// tried again later), failed (given up).
	Attempts *prometheus.CounterVec
	// Latency is the time from the change to its delivery, for deliveries
	// that arrived.
	Latency prometheus.Histogram
	// AttemptDuration is how long one attempt took (the receiver's answer).
	AttemptDuration prometheus.Histogram
}

// NewWebhooks creates the webhook metrics and registers them on reg; depth
// reports the outbox's pending deliveries when scraped.
func NewWebhooks(reg prometheus.Registerer, depth func() float64) *Webhooks {
	m := &Webhooks{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_webhook_attempts_total", Help: "Webhook delivery attempts, by outcome (delivered, retry, failed: given up)."},
			[]string{"outcome"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_webhook_delivery_latency_seconds", Help: "Time from a change to its webhook delivery.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600}}),
		AttemptDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_webhook_attempt_duration_seconds", Help: "Time a receiver took to answer a delivery attempt.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
	}
	// Every outcome is exported from the start, at 0: the first delivery
	// given up is then an increase Prometheus sees (SeatdWebhookGivenUp),
	// not a new series whose first sample is already 1.
	for _, o := range []string{"delivered", "retry", "failed"} {
		m.Attempts.WithLabelValues(o)
	}
	reg.MustRegister(m.Attempts, m.Latency, m.AttemptDuration,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seatd_webhook_outbox_depth",
			Help: "Webhook deliveries waiting to be sent (pending)."}, depth))
	return m
}

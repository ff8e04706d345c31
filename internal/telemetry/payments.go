package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Payments are the payment flow's metrics.
type Payments struct {
	// Outcomes counts payments by what became of them: started, booked
	// (a success sold its seats), failed (a declined attempt), canceled,
	// refunded_seats_taken (a success whose seats were taken: refunded in
	// full), provider_error (the provider did not make the intent).
	Outcomes *prometheus.CounterVec
	// Events counts provider events (webhooks) by result: applied,
	// duplicate (seen before), ignored (changed nothing: older news, an
	// intent not the payment's), unknown (no payment of seatd's).
	Events *prometheus.CounterVec
	// Refused counts webhook deliveries refused for their signature
	// (missing, wrong, or older than the tolerance).
	Refused prometheus.Counter
	// Refunds counts refunds by outcome: requested, succeeded, failed.
	Refunds *prometheus.CounterVec
	// Reconciled counts the reconciler's questions to the provider by
	// result: changed (the answer changed the payment), unchanged, error.
	Reconciled *prometheus.CounterVec
	// ConfirmLatency is the time from the provider's event to its booking.
	ConfirmLatency prometheus.Histogram
}

// PaymentState is what the payments table holds when scraped.
type PaymentState struct {
	Processing       int
	ProcessingOldest time.Duration
	RefundsFailed    int
}

// NewPayments creates the payment metrics and registers them on reg; state
// reads the payments table once per scrape (ok false when it cannot: the
// gauges are then left out of that scrape).
func NewPayments(reg prometheus.Registerer, state func() (PaymentState, bool)) *Payments {
	m := &Payments{
		Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_payments_total",
			Help: "Payments by outcome (started, booked, failed, canceled, refunded_seats_taken, provider_error)."},
			[]string{"outcome"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_payment_events_total", Help: "Provider events received, by result (applied, duplicate, ignored, unknown)."},
			[]string{"result"}),
		Refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_payment_webhooks_refused_total",
			Help: "Provider webhook deliveries refused: signature missing, wrong or older than the tolerance."}),
		Refunds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_refunds_total", Help: "Refunds by outcome (requested, succeeded, failed)."},
			[]string{"outcome"}),
		Reconciled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_payment_reconciled_total", Help: "The reconciler's questions to the provider, by result (changed, unchanged, error)."},
			[]string{"result"}),
		ConfirmLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_payment_confirm_seconds", Help: "Time from the provider's confirmation of a payment to its booking.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
	}
	// Every label is exported from the start, at 0, so the first refused
	// webhook or failed refund is an increase an alert sees.
	for _, o := range []string{"started", "booked", "failed", "canceled", "refunded_seats_taken", "provider_error"} {
		m.Outcomes.WithLabelValues(o)
	}
	for _, o := range []string{"applied", "duplicate", "ignored", "unknown"} {
		m.Events.WithLabelValues(o)
	}
	for _, o := range []string{"requested", "succeeded", "failed"} {
		m.Refunds.WithLabelValues(o)
	}
	for _, o := range []string{"changed", "unchanged", "error"} {
		m.Reconciled.WithLabelValues(o)
	}
	reg.MustRegister(m.Outcomes, m.Events, m.Refused, m.Refunds, m.Reconciled, m.ConfirmLatency, &paymentState{read: state,
		processing: prometheus.NewDesc("seatd_payments_processing", "Payments the provider says are processing.", nil, nil),
		oldest: prometheus.NewDesc("seatd_payments_processing_oldest_seconds",
			"How long the oldest payment has been processing (0 when none).", nil, nil),
		failed: prometheus.NewDesc("seatd_refunds_failed", "Refunds that failed and were not retried yet.", nil, nil)})
	return m
}

// paymentState reports the table's gauges from one read.
type paymentState struct {
	read                       func() (PaymentState, bool)
	processing, oldest, failed *prometheus.Desc
}

func (c *paymentState) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.processing
	ch <- c.oldest
	ch <- c.failed
}

func (c *paymentState) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.read()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.processing, prometheus.GaugeValue, float64(s.Processing))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.ProcessingOldest.Seconds())
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, float64(s.RefundsFailed))
}

package telemetry

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exports a pgx pool's statistics, read at each scrape:
// how full the pool is (acquired against max) and how often and how long
// callers waited for a connection, which is what saturation looks like.
// Each pool's series carry its name in the pool label: the store's pool
// is "main"; the shared hold statements and transactions have pools of
// their own, as many connections as may run at once, so "full" is their
// normal state under load and only a wait says something is wrong.
type PoolCollector struct {
	stat func() *pgxpool.Stat

	acquired, idle, total, max, constructing *prometheus.Desc
	acquires, emptyAcquires, canceled        *prometheus.Desc
	acquireWait, emptyWait                   *prometheus.Desc
}

var _ prometheus.Collector = (*PoolCollector)(nil)

// NewPoolCollector returns a collector over stat (pool.Stat) of the pool
// named name.
func NewPoolCollector(name string, stat func() *pgxpool.Stat) *PoolCollector {
	d := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("seatd_pg_pool_"+metric, help, nil, prometheus.Labels{"pool": name})
	}
	return &PoolCollector{stat: stat,
		acquired:      d("acquired_conns", "Postgres connections in use."),
		idle:          d("idle_conns", "Idle Postgres connections in the pool."),
		total:         d("total_conns", "Postgres connections in the pool (in use, idle and being opened)."),
		max:           d("max_conns", "The pool's connection cap (SEATD_PG_MAX_CONNS for main, SEATD_HOLD_BATCH_SLOTS for the hold pools)."),
		constructing:  d("constructing_conns", "Postgres connections being opened."),
		acquires:      d("acquires_total", "Connections taken from the pool."),
		emptyAcquires: d("empty_acquires_total", "Acquires that had to wait because no connection was idle."),
		canceled:      d("canceled_acquires_total", "Acquires given up (context ended) while waiting."),
		acquireWait:   d("acquire_seconds_total", "Time spent acquiring connections, waits included."),
		emptyWait:     d("empty_acquire_wait_seconds_total", "Time spent waiting for a connection when none was idle."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.constructing,
		c.acquires, c.emptyAcquires, c.canceled, c.acquireWait, c.emptyWait} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stat()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	n := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(c.acquired, float64(s.AcquiredConns()))
	g(c.idle, float64(s.IdleConns()))
	g(c.total, float64(s.TotalConns()))
	g(c.max, float64(s.MaxConns()))
	g(c.constructing, float64(s.ConstructingConns()))
	n(c.acquires, float64(s.AcquireCount()))
	n(c.emptyAcquires, float64(s.EmptyAcquireCount()))
	n(c.canceled, float64(s.CanceledAcquireCount()))
	n(c.acquireWait, s.AcquireDuration().Seconds())
	n(c.emptyWait, s.EmptyAcquireWaitTime().Seconds())
}

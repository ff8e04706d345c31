package waitroom

// The automatic rate: admit as fast as the hold latency allows.

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// AIMD sets the automatic admission rate from the measured hold latency,
// the way TCP sets its window: every adjustment (Admitter, every
// AdjustEvery) it takes the p99 of the holds observed since the last one;
// while it is under the target the rate rises by Step visitors a minute
// (additive increase), and when it is over, the rate is multiplied by
// Decrease (multiplicative decrease), within [Min, Max]. So the rate
// climbs slowly while the engine copes and backs off at once when holds
// slow down, and a steady crowd settles just under the target. With no
// hold observed, nobody admitted is holding yet: the rate rises.
//
// The latencies are not fed to it: it reads the hold-latency histogram
// the engine keeps anyway (seatd_hold_duration_seconds) and takes the p99
// of the bucket counts added since the last adjustment, so the hold path
// pays nothing for it. An AIMD belongs to one goroutine (the admitter's).
type AIMD struct {
	o       AIMDOptions
	latency prometheus.Collector
	rate    float64
	prev    []bucket      // the histogram's cumulative buckets at the last adjustment
	p99     time.Duration // of the last adjustment
}

// AIMDOptions tune the controller; zero fields take the defaults.
type AIMDOptions struct {
	Target   time.Duration // hold p99 to stay under (250 ms)
	Start    float64       // first rate, visitors a minute (60)
	Min, Max float64       // bounds of the rate (10, 6000)
	Step     float64       // additive increase per adjustment (30)
	Decrease float64       // multiplicative decrease factor (0.5)
}

// NewAIMD returns a controller with o's settings that follows the p99 of
// latency: a histogram, or a vector of histograms with the same buckets
// (their series are added up), observed in seconds.
func NewAIMD(latency prometheus.Collector, o AIMDOptions) *AIMD {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Target <= 0 {
		o.Target = 250 * time.Millisecond
	}
	def(&o.Start, 60)
	def(&o.Min, 10)
	def(&o.Max, 6000)
	def(&o.Step, 30)
	if o.Decrease <= 0 || o.Decrease >= 1 {
		o.Decrease = 0.5
	}
	c := &AIMD{o: o, latency: latency, rate: min(max(o.Start, o.Min), o.Max)}
	// The holds before the first adjustment's period are not its own.
	c.prev = readBuckets(latency)
	return c
}

// Adjust moves the rate by the p99 observed since the last adjustment and
// returns the new rate and that p99 (0 with no hold observed).
func (c *AIMD) Adjust() (rate float64, p99 time.Duration) {
	cur := readBuckets(c.latency)
	c.p99 = quantileSince(0.99, c.prev, cur)
	c.prev = cur
	if c.p99 > c.o.Target {
		c.rate *= c.o.Decrease
	} else {
		c.rate += c.o.Step
	}
	c.rate = min(max(c.rate, c.o.Min), c.o.Max)
	return c.rate, c.p99
}

// Rate is the current automatic rate, visitors a minute.
func (c *AIMD) Rate() float64 { return c.rate }

// P99 is the hold p99 the last adjustment saw.
func (c *AIMD) P99() time.Duration { return c.p99 }

// bucket is one cumulative histogram bucket: count observations of at
// most upper seconds. The last bucket of a reading is +Inf (every
// observation).
type bucket struct {
	upper float64
	count uint64
}

// readBuckets collects latency's histograms and adds their series up,
// bucket by bucket; nil for no series.
func readBuckets(latency prometheus.Collector) []bucket {
	if latency == nil {
		return nil
	}
	ch := make(chan prometheus.Metric, 16)
	go func() {
		latency.Collect(ch)
		close(ch)
	}()
	sum := map[float64]uint64{}
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil || d.Histogram == nil {
			continue
		}
		for _, b := range d.Histogram.Bucket {
			sum[b.GetUpperBound()] += b.GetCumulativeCount()
		}
		sum[math.Inf(1)] += d.Histogram.GetSampleCount()
	}
	if len(sum) == 0 {
		return nil
	}
	out := make([]bucket, 0, len(sum))
	for upper, n := range sum {
		out = append(out, bucket{upper, n})
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmp.Compare(a.upper, b.upper) })
	return out
}

// quantileSince estimates the q-quantile of the observations added between
// the readings prev and cur, the way Prometheus' histogram_quantile does:
// it finds the bucket the rank falls in and interpolates linearly inside
// it (from 0 for the first bucket); a rank past the last finite bound
// answers that bound. 0 with no observation in between. A reading whose
// counts went down (the process's counters restarted) counts from zero.
func quantileSince(q float64, prev, cur []bucket) time.Duration {
	if len(cur) == 0 {
		return 0
	}
	before := make(map[float64]uint64, len(prev))
	for _, b := range prev {
		before[b.upper] = b.count
	}
	if cur[len(cur)-1].count < before[math.Inf(1)] {
		clear(before)
	}
	delta := make([]uint64, len(cur))
	for i, b := range cur {
		if b.count > before[b.upper] {
			delta[i] = b.count - before[b.upper]
		}
		if i > 0 && delta[i] < delta[i-1] { // cumulative, whatever the series did
			delta[i] = delta[i-1]
		}
	}
	total := delta[len(delta)-1]
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for i, b := range cur {
		if float64(delta[i]) >= rank {
			if math.IsInf(b.upper, 1) {
				return seconds(lower)
			}
			in := delta[i] - below
			frac := 1.0
			if in > 0 {
				frac = (rank - float64(below)) / float64(in)
			}
			return seconds(lower + (b.upper-lower)*frac)
		}
		lower, below = b.upper, delta[i]
	}
	return seconds(lower)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

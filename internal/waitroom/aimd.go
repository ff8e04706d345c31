package waitroom

// The automatic rate: admit as fast as the hold latency allows.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
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
// pays nothing for it. With Redis (AIMDOptions.Redis) the p99 is of every
// process's holds, not only this one's: at each adjustment every process
// leaves its histogram's buckets in one Redis hash and reads the others'
// (shared), and the counts each added since its last reading are summed.
// So whichever process holds a room's lease admits by the latency the
// whole cluster's buyers see. An AIMD belongs to one goroutine (the
// admitter's).
type AIMD struct {
	o       AIMDOptions
	latency prometheus.Collector
	share   *shared // nil: this process's holds only
	rate    float64
	// prev is each process's cumulative buckets at the last adjustment
	// (this one's under own).
	prev map[string][]bucket
	own  string
	p99  time.Duration // of the last adjustment
}

// AIMDOptions tune the controller; zero fields take the defaults.
type AIMDOptions struct {
	Target   time.Duration // hold p99 to stay under (250 ms)
	Start    float64       // first rate, visitors a minute (60)
	Min, Max float64       // bounds of the rate (10, 6000)
	Step     float64       // additive increase per adjustment (30)
	Decrease float64       // multiplicative decrease factor (0.5)
	// Redis, when set, is where the processes pool their hold latency,
	// under KeyPrefix (SEATD_KEY_PREFIX).
	Redis     redis.Cmdable
	KeyPrefix string
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
	c := &AIMD{o: o, latency: latency, rate: min(max(o.Start, o.Min), o.Max), own: uuid.NewString()}
	if o.Redis != nil {
		c.share = &shared{rdb: o.Redis, key: o.KeyPrefix + ":{waitroom}:hold-latency"}
	}
	// The holds before the first adjustment's period are not its own.
	c.prev = map[string][]bucket{c.own: readBuckets(latency)}
	return c
}

// Adjust moves the rate by the p99 observed since the last adjustment
// (every process's, with Redis) and returns the new rate and that p99 (0
// with no hold observed). Without Redis, or when Redis fails, it goes by
// this process's holds alone; another process's holds count from its
// second reading on, so one that appears (or comes back) adds only what
// it observed since.
func (c *AIMD) Adjust(ctx context.Context) (rate float64, p99 time.Duration) {
	readings := map[string][]bucket{c.own: readBuckets(c.latency)}
	pooled := false
	if c.share != nil {
		if all, err := c.share.exchange(ctx, c.own, readings[c.own]); err == nil {
			readings, pooled = all, true
		}
	}
	next := maps.Clone(c.prev)
	if pooled {
		next = map[string][]bucket{} // a process gone from the hash is forgotten
	}
	sum := map[float64]uint64{}
	for owner, cur := range readings {
		if before, seen := c.prev[owner]; seen {
			for _, b := range deltaSince(before, cur) {
				sum[b.upper] += b.count
			}
		}
		next[owner] = cur
	}
	c.prev = next
	c.p99 = quantile(0.99, sorted(sum))
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
	return sorted(sum)
}

// deltaSince is what a histogram's cumulative buckets gained between the
// readings prev and cur, cumulative again. A reading whose counts went
// down (the process's counters restarted) counts from zero.
func deltaSince(prev, cur []bucket) []bucket {
	if len(cur) == 0 {
		return nil
	}
	before := make(map[float64]uint64, len(prev))
	for _, b := range prev {
		before[b.upper] = b.count
	}
	if cur[len(cur)-1].count < before[math.Inf(1)] {
		clear(before)
	}
	out := make([]bucket, len(cur))
	for i, b := range cur {
		out[i].upper = b.upper
		if b.count > before[b.upper] {
			out[i].count = b.count - before[b.upper]
		}
		if i > 0 && out[i].count < out[i-1].count { // cumulative, whatever the series did
			out[i].count = out[i-1].count
		}
	}
	return out
}

// quantile estimates the q-quantile of the observations in the
// cumulative buckets bs, the way Prometheus' histogram_quantile does: it
// finds the bucket the rank falls in and interpolates linearly inside it
// (from 0 for the first bucket); a rank past the last finite bound
// answers that bound. 0 with no observation.
func quantile(q float64, bs []bucket) time.Duration {
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return 0
	}
	rank := q * float64(bs[len(bs)-1].count)
	lower, below := 0.0, uint64(0)
	for _, b := range bs {
		if float64(b.count) >= rank {
			if math.IsInf(b.upper, 1) {
				return seconds(lower)
			}
			in := b.count - below
			frac := 1.0
			if in > 0 {
				frac = (rank - float64(below)) / float64(in)
			}
			return seconds(lower + (b.upper-lower)*frac)
		}
		lower, below = b.upper, b.count
	}
	return seconds(lower)
}

// sorted is the buckets of a sum by bound, in order of bound.
func sorted(sum map[float64]uint64) []bucket {
	out := make([]bucket, 0, len(sum))
	for upper, n := range sum {
		out = append(out, bucket{upper, n})
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmp.Compare(a.upper, b.upper) })
	return out
}

// shared is the Redis hash where the processes leave their hold-latency
// buckets, one field per process: "<expiry ms> <upper>:<count> ...". A
// field is rewritten at each of its process's adjustments; one not
// rewritten within sharedFor (its process stopped) is ignored and
// removed by the next reader. One key, so one slot in a cluster.
type shared struct {
	rdb redis.Cmdable
	key string
}

// sharedFor is how long a process's reading counts without being
// renewed: three adjustments.
const sharedFor = 3 * AdjustEvery

// exchange leaves own's reading in the hash and returns every live
// process's, own's included.
func (s *shared) exchange(ctx context.Context, own string, reading []bucket) (map[string][]bucket, error) {
	now := time.Now()
	var b strings.Builder
	b.WriteString(strconv.FormatInt(now.Add(sharedFor).UnixMilli(), 10))
	for _, x := range reading {
		fmt.Fprintf(&b, " %s:%d", strconv.FormatFloat(x.upper, 'g', -1, 64), x.count)
	}
	pipe := s.rdb.TxPipeline()
	pipe.HSet(ctx, s.key, own, b.String())
	pipe.PExpire(ctx, s.key, 2*sharedFor)
	all := pipe.HGetAll(ctx, s.key)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("waitroom: hold latency of the processes: %w", err)
	}
	out := map[string][]bucket{}
	var stale []string
	for owner, v := range all.Val() {
		r, expires, ok := parseReading(v)
		if !ok || expires.Before(now) {
			stale = append(stale, owner)
			continue
		}
		out[owner] = r
	}
	if len(stale) > 0 {
		_ = s.rdb.HDel(ctx, s.key, stale...).Err() // the next reader tries again
	}
	out[own] = reading
	return out, nil
}

// parseReading reads a field of the shared hash.
func parseReading(v string) (r []bucket, expires time.Time, ok bool) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return nil, time.Time{}, false
	}
	ms, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return nil, time.Time{}, false
	}
	for _, f := range fields[1:] {
		u, n, found := strings.Cut(f, ":")
		upper, err1 := strconv.ParseFloat(u, 64)
		count, err2 := strconv.ParseUint(n, 10, 64)
		if !found || err1 != nil || err2 != nil {
			return nil, time.Time{}, false
		}
		r = append(r, bucket{upper, count})
	}
	return r, time.UnixMilli(ms), true
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

package waitroom

// The automatic rate: admit as fast as the hold latency allows.

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
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
type AIMD struct {
	o AIMDOptions

	mu      sync.Mutex
	rate    float64
	samples []time.Duration // since the last adjustment, at most maxSamples
	seen    int             // observed since the last adjustment
	p99     time.Duration   // of the last adjustment
}

// AIMDOptions tune the controller; zero fields take the defaults.
type AIMDOptions struct {
	Target   time.Duration // hold p99 to stay under (250 ms)
	Start    float64       // first rate, visitors a minute (60)
	Min, Max float64       // bounds of the rate (10, 6000)
	Step     float64       // additive increase per adjustment (30)
	Decrease float64       // multiplicative decrease factor (0.5)
}

// maxSamples bounds the memory of an adjustment period: past it, new
// samples replace old ones at random positions (a reservoir), which keeps
// the p99 an estimate of the whole period.
const maxSamples = 4096

// NewAIMD returns a controller with o's settings.
func NewAIMD(o AIMDOptions) *AIMD {
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
	return &AIMD{o: o, rate: min(max(o.Start, o.Min), o.Max)}
}

// Observe records one hold's latency: the hook the hold path feeds.
func (c *AIMD) Observe(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	if len(c.samples) < maxSamples {
		c.samples = append(c.samples, d)
		return
	}
	// Reservoir sampling: the seen-th sample replaces a random one with
	// probability maxSamples/seen.
	if j := rand.IntN(c.seen); j < maxSamples { // #nosec G404 -- sampling, not a secret
		c.samples[j] = d
	}
}

// Adjust moves the rate by the p99 observed since the last adjustment and
// returns the new rate and that p99 (0 with no hold observed).
func (c *AIMD) Adjust() (rate float64, p99 time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p99 = 0
	if len(c.samples) > 0 {
		slices.Sort(c.samples)
		c.p99 = c.samples[(len(c.samples)*99)/100]
	}
	if c.p99 > c.o.Target {
		c.rate *= c.o.Decrease
	} else {
		c.rate += c.o.Step
	}
	c.rate = min(max(c.rate, c.o.Min), c.o.Max)
	c.samples, c.seen = c.samples[:0], 0
	return c.rate, c.p99
}

// Rate is the current automatic rate, visitors a minute.
func (c *AIMD) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// P99 is the hold p99 the last adjustment saw.
func (c *AIMD) P99() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p99
}

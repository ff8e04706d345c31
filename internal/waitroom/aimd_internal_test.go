package waitroom

import (
	"math"
	"testing"
	"time"
)

// TestQuantileSince: the p99 of the observations between two readings of
// a histogram's cumulative buckets, interpolated inside the bucket the
// rank falls in.
func TestQuantileSince(t *testing.T) {
	inf := math.Inf(1)
	reading := func(counts ...uint64) []bucket {
		uppers := []float64{.01, .1, 1, inf}
		out := make([]bucket, len(counts))
		for i, n := range counts {
			out[i] = bucket{uppers[i], n}
		}
		return out
	}
	for name, c := range map[string]struct {
		prev, cur []bucket
		want      time.Duration
	}{
		"no reading":                  {nil, nil, 0},
		"nothing since":               {reading(5, 10, 20, 20), reading(5, 10, 20, 20), 0},
		"all in the first bucket":     {nil, reading(100, 100, 100, 100), 9900 * time.Microsecond},
		"rank inside the second":      {nil, reading(50, 150, 150, 150), 10*time.Millisecond + 90*time.Millisecond*985/1000},
		"only the new ones count":     {reading(0, 0, 1000, 1000), reading(100, 100, 1000, 1000), 9900 * time.Microsecond},
		"past the last bound":         {nil, reading(0, 0, 0, 10), time.Second},
		"counters restarted":          {reading(0, 0, 500, 500), reading(100, 100, 100, 100), 9900 * time.Microsecond},
		"a series appeared since":     {reading(100, 100, 100, 100), reading(100, 100, 200, 200), 100*time.Millisecond + 900*time.Millisecond*99/100},
		"the 99th of 100 at a bound":  {nil, reading(99, 99, 100, 100), 10 * time.Millisecond},
		"a 1 in 100 tail moves it up": {nil, reading(98, 98, 100, 100), 100*time.Millisecond + 900*time.Millisecond/2},
	} {
		got := quantile(0.99, deltaSince(c.prev, c.cur))
		if d := got - c.want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s: p99 %v, want %v", name, got, c.want)
		}
	}
}

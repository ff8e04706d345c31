package main

import (
	"math"
	"slices"
	"time"
)

// Latency summarizes samples, in milliseconds.
type Latency struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	// P999 is the 99.9th percentile, a tail the rows read where samples
	// are plenty (thousands or more).
	P999 float64 `json:"p999_ms,omitempty"`
	Max  float64 `json:"max_ms"`
}

// latencyOf sorts the samples (ms) and takes nearest-rank percentiles.
func latencyOf(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	rank := func(p float64) float64 {
		// The small epsilon keeps a rank that is whole (99.9 % of 2 000)
		// from rounding up past it in floating point.
		i := int(math.Ceil(p/100*float64(len(s))-1e-9)) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Latency{N: len(s), Mean: round3(sum / float64(len(s))), P50: round3(rank(50)), P95: round3(rank(95)),
		P99: round3(rank(99)), P999: round3(rank(99.9)), Max: round3(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ratio is a/b, or 0 when either is unknown.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return round3(a / b)
}

package main

import (
	"math"
	"slices"
)

// percentile is the nearest-rank percentile p (0 < p ≤ 100) of xs: the
// smallest value with at least p % of the values at or below it. With 10
// pods p99 is the slowest pod, as it would be with any definition that does
// not invent values. NaN when xs is empty.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// median of the values that are not NaN (the mean of the middle two for
// an even count); NaN when there are none.
func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const mib = 1 << 20

func toMiB(bytes int64) float64 { return float64(bytes) / mib }

package stats

import (
	"testing"
	"time"
)

func timeAt(sec float64) time.Time {
	return time.Unix(1700000000, 0).Add(time.Duration(sec * float64(time.Second)))
}

func TestCPURates(t *testing.T) {
	type obs struct {
		at    float64 // seconds
		usage uint64  // core-nanoseconds
		want  *uint64 // nanocores
	}
	tests := []struct {
		name string
		obs  []obs
	}{
		{"first sample has no rate", []obs{{0, 1000, nil}}},
		{"half a core over two seconds", []obs{{0, 0, nil}, {2, 1_000_000_000, ptrTo[uint64](500_000_000)}}},
		{"a sample too soon keeps the previous rate and base", []obs{
			{0, 0, nil},
			{0.2, 100_000_000, nil},
			{1, 250_000_000, ptrTo[uint64](250_000_000)},
			{1.5, 2_000_000_000, ptrTo[uint64](250_000_000)},
			{3, 2_250_000_000, ptrTo[uint64](1_000_000_000)},
		}},
		{"a counter going back starts over", []obs{{0, 5_000, nil}, {2, 4_000, nil}, {4, 2_000_004_000, ptrTo[uint64](1_000_000_000)}}},
		{"a sample older than the kept one starts over", []obs{{5, 5_000, nil}, {3, 6_000, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newCPURates()
			for i, o := range tt.obs {
				got := r.observe("c1", timeAt(o.at), o.usage)
				if (got == nil) != (o.want == nil) || got != nil && *got != *o.want {
					t.Fatalf("sample %d (%.1fs, %d): rate %v, want %v", i, o.at, o.usage, fmtPtr(got), fmtPtr(o.want))
				}
			}
		})
	}
}

func TestCPURatesKeysAndForget(t *testing.T) {
	r := newCPURates()
	r.observe("a", timeAt(0), 0)
	r.observe("b", timeAt(0), 0)
	if got := r.observe("a", timeAt(1), 1_000_000_000); got == nil || *got != 1_000_000_000 {
		t.Fatalf("a: rate %v, want one core", fmtPtr(got))
	}
	r.forget(timeAt(0.5))
	if _, ok := r.last["b"]; ok {
		t.Error("b, last sampled before the cutoff, kept")
	}
	if _, ok := r.last["a"]; !ok {
		t.Error("a, sampled after the cutoff, forgotten")
	}
}

func fmtPtr(p *uint64) any {
	if p == nil {
		return "nil"
	}
	return *p
}

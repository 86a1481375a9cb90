package chaos

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseGoroutineDump(t *testing.T) {
	dump := `goroutine profile: total 5
3 @ 0x43e8ce 0x44d9a5 0x7c1b45 0x471f01
#	0x7c1b44	github.com/asynkron/protoactor-go/actor.(*defaultMailbox).run+0x44	/m/mailbox.go:120
#	0x471f00	runtime.goexit+0x0	/r/asm_amd64.s:1700

2 @ 0x43e8ce 0x40a6cc 0x471f01
#	0x40a6cb	time.Sleep+0x12b	/r/time.go:300
#	0x471f00	runtime.goexit+0x0	/r/asm_amd64.s:1700
`
	got, err := parseGoroutineDump(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"github.com/asynkron/protoactor-go/actor.(*defaultMailbox).run < runtime.goexit": 3,
		"time.Sleep < runtime.goexit": 2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseGoroutineDump = %v, want %v", got, want)
	}
}

func TestDumpGrowth(t *testing.T) {
	before := map[string]int{"a": 2, "b": 1, "gone": 4}
	after := map[string]int{"a": 5, "b": 1, "c": 1, "d": 3}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{10, []string{"+3 a", "+3 d", "+1 c"}},
		{2, []string{"+3 a", "+3 d"}},
	} {
		if got := DumpGrowth(before, after, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DumpGrowth(n=%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestMedianAndGrowth(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %g, want %g", tc.xs, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ref, frac, floor, want float64
	}{
		{20, 0.10, 4, 4},
		{100, 0.10, 4, 10},
		{56, 0.05, 10, 10},
	} {
		if got := Growth(tc.ref, tc.frac, tc.floor); got != tc.want {
			t.Errorf("Growth(%g, %g, %g) = %g, want %g", tc.ref, tc.frac, tc.floor, got, tc.want)
		}
	}
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		ys   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 0},
		{[]float64{1, 2, 3, 4}, 1},
		{[]float64{5, 5, 5}, 0},
		{[]float64{3, 1, 3, 1}, -0.4},
	} {
		if got := Slope(tc.ys); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Slope(%v) = %g, want %g", tc.ys, got, tc.want)
		}
	}
}

func TestActorsAbove(t *testing.T) {
	idle := map[string]float64{"pleg": 1, "gc": 1}
	for _, tc := range []struct {
		now  map[string]float64
		want string
	}{
		{map[string]float64{"pleg": 1, "gc": 1}, ""},
		{map[string]float64{"pleg": 1}, ""},
		{map[string]float64{"pleg": 1, "gc": 1, "pod-worker": 2, "container": 3}, "container 3 (was 0), pod-worker 2 (was 0)"},
		{nil, ""},
	} {
		if got := ActorsAbove(tc.now, idle); got != tc.want {
			t.Errorf("ActorsAbove(%v) = %q, want %q", tc.now, got, tc.want)
		}
	}
}

package topologymanager

import (
	"testing"
)

func TestNewPolicyOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    map[string]string
		want    PolicyOptions
		warning bool
		err     string
	}{
		{name: "none", want: PolicyOptions{MaxAllowableNUMANodes: 8}},
		{name: "prefer closest", opts: map[string]string{"prefer-closest-numa-nodes": "true"}, want: PolicyOptions{PreferClosestNUMA: true, MaxAllowableNUMANodes: 8}},
		{name: "prefer closest off", opts: map[string]string{"prefer-closest-numa-nodes": "false"}, want: PolicyOptions{MaxAllowableNUMANodes: 8}},
		{name: "bad bool", opts: map[string]string{"prefer-closest-numa-nodes": "x"},
			err: `bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "x": invalid syntax`},
		{name: "more NUMA nodes", opts: map[string]string{"max-allowable-numa-nodes": "16"}, want: PolicyOptions{MaxAllowableNUMANodes: 16}, warning: true},
		{name: "the default", opts: map[string]string{"max-allowable-numa-nodes": "8"}, want: PolicyOptions{MaxAllowableNUMANodes: 8}},
		{name: "fewer", opts: map[string]string{"max-allowable-numa-nodes": "4"},
			err: `the minimum value of "max-allowable-numa-nodes" should not be less than 8`},
		{name: "not a number", opts: map[string]string{"max-allowable-numa-nodes": "many"},
			err: `unable to convert policy option to integer "max-allowable-numa-nodes": strconv.Atoi: parsing "many": invalid syntax`},
		{name: "unknown", opts: map[string]string{"spread": "true"}, err: `unknown Topology Manager Policy option: "spread"`},
	} {
		got, warning, err := NewPolicyOptions(tc.opts)
		if e := errOf(err); e != tc.err {
			t.Errorf("%s: err %q, want %q", tc.name, e, tc.err)
			continue
		}
		if err == nil && (got != tc.want || (warning != "") != tc.warning) {
			t.Errorf("%s: got %+v %q, want %+v (warning %v)", tc.name, got, warning, tc.want, tc.warning)
		}
	}
}

func errOf(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestValidateOptions(t *testing.T) {
	nine := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{name: "nine nodes", cfg: Config{Policy: PolicyRestricted, Scope: ScopeContainer, NUMANodes: nine},
			err: "unsupported on machines with more than 8 NUMA Nodes"},
		{name: "nine nodes allowed", cfg: Config{Policy: PolicyRestricted, Scope: ScopeContainer, NUMANodes: nine, Options: PolicyOptions{MaxAllowableNUMANodes: 9}}},
		{name: "nine nodes, policy none", cfg: Config{Policy: PolicyNone, Scope: ScopeContainer, NUMANodes: nine}},
		{name: "closest without distances", cfg: Config{Policy: PolicyBestEffort, Scope: ScopeContainer, NUMANodes: []int{0, 1},
			Options: PolicyOptions{PreferClosestNUMA: true}, Distances: map[int][]uint64{0: {10, 20}}},
			err: "cannot discover NUMA topology: error getting NUMA distances from cadvisor"},
		{name: "closest with distances", cfg: Config{Policy: PolicyBestEffort, Scope: ScopeContainer, NUMANodes: []int{0, 1},
			Options: PolicyOptions{PreferClosestNUMA: true}, Distances: map[int][]uint64{0: {10, 20}, 1: {20, 10}}}},
	} {
		if got := errOf(tc.cfg.Validate()); got != tc.err {
			t.Errorf("%s: err %q, want %q", tc.name, got, tc.err)
		}
	}
}

// TestMergeClosest: on four NUMA nodes where 0 is close to 2 (and 1 to
// 3), prefer-closest-numa-nodes picks among two-node hints the closest
// pair, not the lowest, as upstream's NUMAInfo.Closest; single-numa-node
// ignores it.
func TestMergeClosest(t *testing.T) {
	four := []int{0, 1, 2, 3}
	distances := map[int][]uint64{
		0: {10, 32, 12, 32},
		1: {32, 10, 32, 12},
		2: {12, 32, 10, 32},
		3: {32, 12, 32, 10},
	}
	hints := []Hints{{"cpu": {{MaskOf(0, 1), true}, {MaskOf(0, 2), true}, {MaskOf(1, 3), true}, {MaskOf(0, 1, 2, 3), false}}}}
	for _, tc := range []struct {
		name    string
		policy  string
		closest bool
		want    Hint
	}{
		{"narrowest, lowest", PolicyBestEffort, false, Hint{MaskOf(0, 1), true}},
		{"closest", PolicyBestEffort, true, Hint{MaskOf(0, 2), true}},
		{"closest, restricted", PolicyRestricted, true, Hint{MaskOf(0, 2), true}},
	} {
		cfg := Config{Policy: tc.policy, Scope: ScopeContainer, NUMANodes: four, Distances: distances,
			Options: PolicyOptions{PreferClosestNUMA: tc.closest}}
		got, _ := Merge(cfg, hints)
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// Equal distances: the lower nodes.
	cfg := Config{Policy: PolicyBestEffort, NUMANodes: four, Distances: distances, Options: PolicyOptions{PreferClosestNUMA: true}}
	if got, _ := Merge(cfg, []Hints{{"cpu": {{MaskOf(1, 3), true}, {MaskOf(0, 2), true}}}}); got != (Hint{MaskOf(0, 2), true}) {
		t.Errorf("equal distances: got %+v", got)
	}
	// Fewer nodes first, whatever the distance.
	if got, _ := Merge(cfg, []Hints{{"cpu": {{MaskOf(0, 2), true}, {MaskOf(3), true}}}}); got != (Hint{MaskOf(3), true}) {
		t.Errorf("narrower: got %+v", got)
	}
}

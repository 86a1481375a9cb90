package topologymanager

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestMerge(t *testing.T) {
	two := []int{0, 1}
	n0, n1, both := MaskOf(0), MaskOf(1), MaskOf(0, 1)
	for _, tc := range []struct {
		name   string
		policy string
		hints  []Hints
		want   Hint
		admit  bool
	}{
		{"no provider", PolicyRestricted, nil, Hint{both, true}, true},
		{"no preference", PolicySingleNUMANode, []Hints{{"cpu": nil}}, Hint{both, true}, true},
		{"nowhere: best-effort admits", PolicyBestEffort, []Hints{{"cpu": {}}}, Hint{both, false}, true},
		{"nowhere: restricted refuses", PolicyRestricted, []Hints{{"cpu": {}}}, Hint{both, false}, false},
		{"the narrowest preferred", PolicyRestricted, []Hints{{"cpu": {{n0, true}, {n1, true}, {both, false}}}}, Hint{n0, true}, true},
		{"only across nodes: restricted refuses", PolicyRestricted, []Hints{{"cpu": {{both, false}}}}, Hint{both, false}, false},
		{"only across nodes: best-effort admits", PolicyBestEffort, []Hints{{"cpu": {{both, false}}}}, Hint{both, false}, true},
		{"two resources agree on node 1", PolicySingleNUMANode, []Hints{{"cpu": {{n0, true}, {n1, true}}}, {"gpu": {{n1, true}}}}, Hint{n1, true}, true},
		{"two resources on different nodes", PolicySingleNUMANode, []Hints{{"cpu": {{n0, true}}}, {"gpu": {{n1, true}}}}, Hint{both, false}, false},
		{"single-numa-node drops wider hints", PolicySingleNUMANode, []Hints{{"cpu": {{both, true}}}}, Hint{both, false}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, admit := Merge(Config{Policy: tc.policy, Scope: ScopeContainer, NUMANodes: two}, tc.hints)
			if got != tc.want || admit != tc.admit {
				t.Fatalf("got %+v admit %v, want %+v admit %v", got, admit, tc.want, tc.admit)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		fail string
	}{
		{Config{Policy: PolicyNone, Scope: ScopeContainer}, ""},
		{Config{Policy: PolicySingleNUMANode, Scope: ScopePod, NUMANodes: []int{0, 1}}, ""},
		{Config{Policy: "strict", Scope: ScopePod}, `unknown policy: "strict"`},
		{Config{Policy: PolicyNone, Scope: "node"}, `unknown scope: "node"`},
		{Config{Policy: PolicyRestricted, Scope: ScopePod, NUMANodes: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}}, "unsupported on machines with more than 8 NUMA Nodes"},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.fail == "") || (err != nil && err.Error() != tc.fail) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.fail)
		}
	}
}

// provider is a hint provider that records its allocations.
type provider struct {
	hints     Hints
	err       error
	allocated map[string]Hint
}

func (p *provider) ContainerHints(*v1.Pod, *v1.Container) Hints { return p.hints }
func (p *provider) PodHints(*v1.Pod) Hints                      { return p.hints }
func (p *provider) Allocate(_ *v1.Pod, c *v1.Container, h Hint) error {
	if p.err != nil {
		return p.err
	}
	p.allocated[c.Name] = h
	return nil
}

type reasonedErr struct{}

func (reasonedErr) Error() string  { return "SMT Alignment Error: x" }
func (reasonedErr) Reason() string { return "SMTAlignmentError" }

func TestAdmit(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}}, Containers: []v1.Container{{Name: "a"}}}}
	for _, tc := range []struct {
		name           string
		cfg            Config
		p              *provider
		reason, msg    string
		allocatedOnto  Mask
		allocatedCount int
	}{
		{"none: allocated anywhere", Config{Policy: PolicyNone, Scope: ScopeContainer, NUMANodes: []int{0, 1}},
			&provider{hints: Hints{"cpu": {}}}, "", "", 0, 2},
		{"restricted refuses", Config{Policy: PolicyRestricted, Scope: ScopeContainer, NUMANodes: []int{0, 1}},
			&provider{hints: Hints{"cpu": {}}}, ReasonTopologyAffinity, "Resources cannot be allocated with Topology locality", 0, 0},
		{"pod scope: one hint for all", Config{Policy: PolicyRestricted, Scope: ScopePod, NUMANodes: []int{0, 1}},
			&provider{hints: Hints{"cpu": {{MaskOf(1), true}}}}, "", "", MaskOf(1), 2},
		{"an unexpected error", Config{Policy: PolicyNone, Scope: ScopeContainer},
			&provider{err: errors.New("boom")}, ReasonUnexpected, "Allocate failed due to boom, which is unexpected", 0, 0},
		{"an error with its reason", Config{Policy: PolicyBestEffort, Scope: ScopeContainer, NUMANodes: []int{0}},
			&provider{err: reasonedErr{}}, "SMTAlignmentError", "SMT Alignment Error: x", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.allocated = map[string]Hint{}
			r := Admit(tc.cfg, []HintProvider{tc.p}, pod)
			if (r == nil) != (tc.reason == "") || (r != nil && (r.Reason != tc.reason || r.Message != tc.msg)) {
				t.Fatalf("rejection %+v, want %q %q", r, tc.reason, tc.msg)
			}
			if len(tc.p.allocated) != tc.allocatedCount {
				t.Fatalf("allocated %v", tc.p.allocated)
			}
			for _, h := range tc.p.allocated {
				if h.NUMA != tc.allocatedOnto {
					t.Errorf("allocated onto %b, want %b", h.NUMA, tc.allocatedOnto)
				}
			}
		})
	}
}

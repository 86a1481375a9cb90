package topologymanager

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Policy options, as topologyManagerPolicyOptions names them; upstream
// v1.37.2 knows these two, both stable (no feature gate needed).
const (
	OptionPreferClosestNUMANodes = "prefer-closest-numa-nodes"
	OptionMaxAllowableNUMANodes  = "max-allowable-numa-nodes"
)

// PolicyOptions are the parsed topologyManagerPolicyOptions.
type PolicyOptions struct {
	// PreferClosestNUMA: among hints of as many NUMA nodes, the one of
	// the smallest average distance wins.
	PreferClosestNUMA bool
	// MaxAllowableNUMANodes is the most NUMA nodes a node may have for a
	// policy other than none; 0: the default.
	MaxAllowableNUMANodes int
}

func (o PolicyOptions) maxNUMANodes() int {
	if o.MaxAllowableNUMANodes == 0 {
		return defaultMaxNUMANodes
	}
	return o.MaxAllowableNUMANodes
}

// NewPolicyOptions parses topologyManagerPolicyOptions with upstream's
// errors (upstream parses them only for a policy other than none). An
// option over the default maximum is accepted with a warning, returned.
func NewPolicyOptions(opts map[string]string) (PolicyOptions, string, error) {
	out := PolicyOptions{MaxAllowableNUMANodes: defaultMaxNUMANodes}
	var warning string
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		value := opts[name]
		switch name {
		case OptionPreferClosestNUMANodes:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return out, "", fmt.Errorf("bad value for option %q: %w", name, err)
			}
			out.PreferClosestNUMA = b
		case OptionMaxAllowableNUMANodes:
			n, err := strconv.Atoi(value)
			if err != nil {
				return out, "", fmt.Errorf("unable to convert policy option to integer %q: %w", name, err)
			}
			if n < defaultMaxNUMANodes {
				return out, "", fmt.Errorf("the minimum value of %q should not be less than %v", name, defaultMaxNUMANodes)
			}
			if n > defaultMaxNUMANodes {
				warning = "WARNING: the value of max-allowable-numa-nodes is more than the default recommended value"
			}
			out.MaxAllowableNUMANodes = n
		default:
			return out, "", fmt.Errorf("unknown Topology Manager Policy option: %q", name)
		}
	}
	return out, warning, nil
}

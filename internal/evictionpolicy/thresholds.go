// Package evictionpolicy holds the eviction manager's decisions, as upstream's
// pkg/kubelet/eviction: the signals observed from the node's statistics,
// the thresholds of the configuration, which of them are met (with their
// grace periods, minimum reclaims and the pressure transition period), the
// node conditions they make, and the ranking of the pods to evict. It does
// no I/O and reads no clock: actors/eviction gathers the figures and
// carries out what it decides.
package evictionpolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, named as in the configuration.
type Signal string

// The signals upstream's eviction manager knows on Linux.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// Resources a signal starves besides v1's.
const (
	ResourceInodes v1.ResourceName = "inodes"
	ResourcePIDs   v1.ResourceName = "pids"
)

// signalResource is the resource each signal measures (upstream's
// signalToResource); a signal absent from it is not supported.
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:            v1.ResourceMemory,
	SignalAllocatableMemoryAvailable: v1.ResourceMemory,
	SignalNodeFsAvailable:            v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           ResourceInodes,
	SignalImageFsAvailable:           v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree:          ResourceInodes,
	SignalContainerFsAvailable:       v1.ResourceEphemeralStorage,
	SignalContainerFsInodesFree:      ResourceInodes,
	SignalPIDAvailable:               ResourcePIDs,
}

// signalCondition is the node condition a met threshold of each signal
// sets (upstream's signalToNodeCondition).
var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:            v1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
	SignalNodeFsAvailable:            v1.NodeDiskPressure,
	SignalNodeFsInodesFree:           v1.NodeDiskPressure,
	SignalImageFsAvailable:           v1.NodeDiskPressure,
	SignalImageFsInodesFree:          v1.NodeDiskPressure,
	SignalContainerFsAvailable:       v1.NodeDiskPressure,
	SignalContainerFsInodesFree:      v1.NodeDiskPressure,
	SignalPIDAvailable:               v1.NodePIDPressure,
}

// Resource is the resource a signal measures ("" for an unknown one).
func (s Signal) Resource() v1.ResourceName { return signalResource[s] }

// Condition is the node condition the signal's thresholds set.
func (s Signal) Condition() v1.NodeConditionType { return signalCondition[s] }

// IsDisk reports whether the signal is about a filesystem: under its
// pressure, unused containers and images go before any pod.
func (s Signal) IsDisk() bool { return signalCondition[s] == v1.NodeDiskPressure }

// Value is a threshold's quantity, absolute or a fraction of capacity.
type Value struct {
	// Quantity, when set, is absolute.
	Quantity *resource.Quantity
	// Percentage is a fraction of the capacity (0.1 for "10%").
	Percentage float32
	// text is the value as configured, for messages and logs.
	text string
}

// Of is the value as a quantity of a resource with capacity c, computed as
// upstream's GetThresholdQuantity (a float32 percentage: 10% of 1000Mi is
// a byte more than 100Mi).
func (v Value) Of(c resource.Quantity) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(v.Percentage)*float64(c.Value())), resource.BinarySI)
}

func (v Value) String() string {
	switch {
	case v.text != "":
		return v.text
	case v.Quantity != nil:
		return v.Quantity.String()
	}
	return strconv.FormatFloat(float64(v.Percentage*100), 'f', -1, 32) + "%"
}

// Threshold is one eviction threshold: the signal's available amount
// below Value. A hard one (GracePeriod 0) acts at once; a soft one once it
// has held for GracePeriod.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	// MinReclaim, when set, is how much beyond Value must be available
	// again before the threshold counts as resolved.
	MinReclaim *Value
}

// Hard reports whether the threshold acts without a grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

func (t Threshold) String() string {
	s := fmt.Sprintf("%s<%s", t.Signal, t.Value)
	if !t.Hard() {
		s += fmt.Sprintf(" for %s", t.GracePeriod)
	}
	if t.MinReclaim != nil {
		s += fmt.Sprintf(" (minimum reclaim %s)", t.MinReclaim)
	}
	return s
}

// ParseThresholds is upstream's ParseThresholdConfig: the hard thresholds,
// then the soft ones with their grace periods (each soft threshold must
// have one), each with its minimum reclaim. With "pods" in
// enforceNodeAllocatable, every hard memory.available threshold is also
// one on allocatableMemory.available. Thresholds of 0% and 100% are
// ignored, as upstream. The errors name the field and the signal.
func ParseThresholds(enforceNodeAllocatable []string, hard, soft, softGracePeriod, minimumReclaim map[string]string) ([]Threshold, error) {
	hardT, err := parseStatements("evictionHard", hard)
	if err != nil {
		return nil, err
	}
	softT, err := parseStatements("evictionSoft", soft)
	if err != nil {
		return nil, err
	}
	grace := map[Signal]time.Duration{}
	for _, k := range sortedKeys(softGracePeriod) {
		s, val := Signal(k), softGracePeriod[k]
		if s.Resource() == "" {
			return nil, fmt.Errorf("evictionSoftGracePeriod: unsupported eviction signal %v", s)
		}
		d, err := time.ParseDuration(val)
		if err != nil {
			return nil, fmt.Errorf("evictionSoftGracePeriod %s: %w", s, err)
		}
		if d < 0 {
			return nil, fmt.Errorf("evictionSoftGracePeriod %s: invalid eviction grace period specified: %v, must be a positive value", s, val)
		}
		grace[s] = d
	}
	reclaim := map[Signal]Value{}
	for _, k := range sortedKeys(minimumReclaim) {
		s, val := Signal(k), minimumReclaim[k]
		if s.Resource() == "" {
			return nil, fmt.Errorf("evictionMinimumReclaim: unsupported eviction signal %v", s)
		}
		if strings.HasSuffix(val, "%") {
			p, err := parsePercentage(val)
			if err != nil {
				return nil, fmt.Errorf("evictionMinimumReclaim %s: %w", s, err)
			}
			if p <= 0 {
				return nil, fmt.Errorf("evictionMinimumReclaim %s: eviction percentage minimum reclaim %v must be positive: %s", s, s, val)
			}
			reclaim[s] = Value{Percentage: p, text: val}
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("evictionMinimumReclaim %s: %w", s, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("evictionMinimumReclaim %s: negative eviction minimum reclaim specified for %v", s, s)
		}
		reclaim[s] = Value{Quantity: &q}
	}
	for i := range softT {
		d, ok := grace[softT[i].Signal]
		if !ok {
			return nil, fmt.Errorf("evictionSoftGracePeriod: grace period must be specified for the soft eviction threshold %v", softT[i].Signal)
		}
		softT[i].GracePeriod = d
	}
	out := append(hardT, softT...)
	for i := range out {
		if r, ok := reclaim[out[i].Signal]; ok {
			out[i].MinReclaim = &r
		}
	}
	if slices.Contains(enforceNodeAllocatable, "pods") {
		for _, t := range out {
			if t.Signal == SignalMemoryAvailable && t.Hard() {
				t.Signal = SignalAllocatableMemoryAvailable
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func parseStatements(field string, statements map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, k := range sortedKeys(statements) {
		s, val := Signal(k), statements[k]
		if s.Resource() == "" {
			return nil, fmt.Errorf("%s: unsupported eviction signal %v", field, s)
		}
		if strings.HasSuffix(val, "%") {
			if val == "0%" || val == "100%" {
				continue
			}
			p, err := parsePercentage(val)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", field, s, err)
			}
			if p < 0 {
				return nil, fmt.Errorf("%s: eviction percentage threshold %v must be >= 0%%: %s", field, s, val)
			}
			if p > 1 {
				return nil, fmt.Errorf("%s: eviction percentage threshold %v must be <= 100%%: %s", field, s, val)
			}
			out = append(out, Threshold{Signal: s, Value: Value{Percentage: p, text: val}})
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", field, s, err)
		}
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("%s: eviction threshold %v must be positive: %s", field, s, &q)
		}
		out = append(out, Threshold{Signal: s, Value: Value{Quantity: &q}})
	}
	return out, nil
}

func parsePercentage(input string) (float32, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(input, "%"), 32)
	if err != nil {
		return 0, err
	}
	return float32(v) / 100, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

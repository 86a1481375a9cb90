// Package features is the kubelet feature gate registry: which gates exist, their
// default and maturity, and the upstream rules for turning them on and off.
package features

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Stage is the maturity of a feature gate.
type Stage string

// The stages of a gate, spelt as upstream's --help and errors print them.
const (
	Alpha      Stage = "ALPHA"
	Beta       Stage = "BETA"
	GA         Stage = "GA"
	Deprecated Stage = "DEPRECATED"
)

// Upstream is the stage as upstream's kubernetes_feature_enabled labels
// it: a GA gate's is empty.
func (s Stage) Upstream() string {
	if s == GA {
		return ""
	}
	return string(s)
}

// Spec describes one gate: its default, its stage, and whether it may be changed at all.
type Spec struct {
	Default       bool
	Stage         Stage
	LockToDefault bool
}

// AllAlpha and AllBeta flip every gate of that stage which the user did not set
// explicitly, as upstream's special gates do.
const (
	AllAlpha = "AllAlpha"
	AllBeta  = "AllBeta"
)

// Gates is a mutable set of gate values over the Known registry.
type Gates struct {
	known map[string]Spec
	// raw is every name=value ever set, including AllAlpha/AllBeta; enabled is
	// recomputed from it so later settings override earlier ones as upstream does.
	raw     map[string]bool
	enabled map[string]bool
}

// New returns gates at their defaults.
func New() *Gates {
	return &Gates{known: Known, raw: map[string]bool{}, enabled: map[string]bool{}}
}

// DeepCopy returns an independent copy, used to evaluate a configuration's gates
// without changing the process-wide ones.
func (g *Gates) DeepCopy() *Gates {
	return &Gates{known: g.known, raw: maps.Clone(g.raw), enabled: maps.Clone(g.enabled)}
}

// Enabled reports whether the named gate is on. Asking about a gate that is not
// registered is a programming error, so it panics as upstream does.
func (g *Gates) Enabled(name string) bool {
	if v, ok := g.enabled[name]; ok {
		return v
	}
	spec, ok := g.known[name]
	if !ok {
		panic(fmt.Sprintf("feature gate %q is not registered", name))
	}
	return spec.Default
}

// Explicit returns the gates set so far (as given, including AllAlpha/AllBeta).
func (g *Gates) Explicit() map[string]bool {
	return maps.Clone(g.raw)
}

// SetFromMap applies m over the gates already set. An unknown gate or a change to
// a locked gate is an error and leaves the gates unchanged. Setting a GA or a
// deprecated gate is allowed with a warning, because such gates disappear in a
// later release and the setting will then stop the kubelet from starting.
func (g *Gates) SetFromMap(m map[string]bool) ([]string, error) {
	raw := maps.Clone(g.raw)
	maps.Copy(raw, m)
	enabled := maps.Clone(g.enabled)
	var errs []string
	// Plain gates first so that AllAlpha/AllBeta only fill in gates nobody set.
	names := slices.Sorted(maps.Keys(raw))
	slices.SortStableFunc(names, func(a, b string) int { return boolToInt(isSpecial(a)) - boolToInt(isSpecial(b)) })
	for _, name := range names {
		v := raw[name]
		spec, ok := g.known[name]
		if !ok {
			return nil, fmt.Errorf("unrecognized feature gate: %s", name)
		}
		if spec.LockToDefault && spec.Default != v {
			errs = append(errs, fmt.Sprintf("cannot set feature gate %s to %t, feature is locked to %t", name, v, spec.Default))
			continue
		}
		if isSpecial(name) {
			stage := Alpha
			if name == AllBeta {
				stage = Beta
			}
			for other, s := range g.known {
				if isSpecial(other) || s.Stage != stage {
					continue
				}
				if _, set := raw[other]; !set {
					enabled[other] = v
				}
			}
		}
		enabled[name] = v
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if prev, seen := g.raw[name]; seen && prev == m[name] {
			continue
		}
		switch g.known[name].Stage {
		case Deprecated:
			warnings = append(warnings, fmt.Sprintf("setting deprecated feature gate %s=%t; it will be removed in a future release", name, m[name]))
		case GA:
			warnings = append(warnings, fmt.Sprintf("setting GA feature gate %s=%t; it will be removed in a future release", name, m[name]))
		}
	}
	g.raw, g.enabled = raw, enabled
	return warnings, nil
}

// KnownFeatures lists every gate except GA and deprecated ones, formatted for
// --help as upstream does ("Name=true|false (BETA - default=true)").
func (g *Gates) KnownFeatures() []string {
	var out []string
	for name, spec := range g.known {
		if spec.Stage == GA || spec.Stage == Deprecated {
			continue
		}
		out = append(out, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.Stage, spec.Default))
	}
	slices.Sort(out)
	return out
}

// Parse reads the --feature-gates syntax "A=true,B=false". It checks syntax and
// that every name is registered; locks and warnings are SetFromMap's business.
func Parse(value string) (map[string]bool, error) {
	m := map[string]bool{}
	for _, pair := range strings.Split(value, ",") {
		if len(pair) == 0 {
			continue
		}
		k, v, found := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !found {
			return nil, fmt.Errorf("missing bool value for %s", k)
		}
		v = strings.TrimSpace(v)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("invalid value of %s=%s, err: %v", k, v, err)
		}
		if _, ok := Known[k]; !ok {
			return nil, fmt.Errorf("unrecognized feature gate: %s", k)
		}
		m[k] = b
	}
	return m, nil
}

func isSpecial(name string) bool { return name == AllAlpha || name == AllBeta }

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

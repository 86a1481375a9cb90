package config

import (
	"encoding/csv"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/config/features"
)

// The pflag.Value types below bind flags to KubeletConfiguration fields, many of
// which are pointers in v1beta1. Map and list values follow upstream's
// k8s.io/component-base/cli/flag semantics: the first use of a flag replaces
// whatever the configuration held, repeated uses accumulate.

type stringValue struct{ p *string }

func (v stringValue) Set(s string) error { *v.p = s; return nil }
func (v stringValue) String() string     { return *v.p }
func (v stringValue) Type() string       { return "string" }

type stringPtrValue struct{ p **string }

func (v stringPtrValue) Set(s string) error { *v.p = &s; return nil }
func (v stringPtrValue) Type() string       { return "string" }
func (v stringPtrValue) String() string {
	if *v.p == nil {
		return ""
	}
	return **v.p
}

type ipValue struct{ p *string }

func (v ipValue) Set(s string) error {
	if net.ParseIP(strings.TrimSpace(s)) == nil {
		return fmt.Errorf("%q is not a valid IP address", s)
	}
	*v.p = strings.TrimSpace(s)
	return nil
}
func (v ipValue) String() string { return *v.p }
func (v ipValue) Type() string   { return "ip" }

type int32Value struct{ p *int32 }

func (v int32Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return err
	}
	*v.p = int32(n)
	return nil
}
func (v int32Value) String() string { return strconv.FormatInt(int64(*v.p), 10) }
func (v int32Value) Type() string   { return "int32" }

type int32PtrValue struct{ p **int32 }

func (v int32PtrValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return err
	}
	*v.p = new(int32(n))
	return nil
}
func (v int32PtrValue) Type() string { return "int32" }
func (v int32PtrValue) String() string {
	if *v.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(**v.p), 10)
}

type int64Value struct{ p *int64 }

func (v int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}
func (v int64Value) String() string { return strconv.FormatInt(*v.p, 10) }
func (v int64Value) Type() string   { return "int64" }

type int64PtrValue struct{ p **int64 }

func (v int64PtrValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return err
	}
	*v.p = &n
	return nil
}
func (v int64PtrValue) Type() string { return "int64" }
func (v int64PtrValue) String() string {
	if *v.p == nil {
		return "0"
	}
	return strconv.FormatInt(**v.p, 10)
}

type boolValue struct{ p *bool }

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = b
	return nil
}
func (v boolValue) Type() string   { return "bool" }
func (v boolValue) String() string { return strconv.FormatBool(*v.p) }

type boolPtrValue struct{ p **bool }

func (v boolPtrValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = new(b)
	return nil
}
func (v boolPtrValue) Type() string { return "bool" }
func (v boolPtrValue) String() string {
	return strconv.FormatBool(*v.p != nil && **v.p)
}

type durationValue struct{ p *metav1.Duration }

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	v.p.Duration = d
	return nil
}
func (v durationValue) String() string { return v.p.Duration.String() }
func (v durationValue) Type() string   { return "duration" }

type durationPtrValue struct{ p **metav1.Duration }

func (v durationPtrValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.p = &metav1.Duration{Duration: d}
	return nil
}
func (v durationPtrValue) Type() string { return "duration" }
func (v durationPtrValue) String() string {
	if *v.p == nil {
		return time.Duration(0).String()
	}
	return (*v.p).Duration.String()
}

type verbosityValue struct{ p *logsapi.VerbosityLevel }

func (v verbosityValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return err
	}
	*v.p = logsapi.VerbosityLevel(n)
	return nil
}
func (v verbosityValue) String() string { return strconv.FormatUint(uint64(*v.p), 10) }
func (v verbosityValue) Type() string   { return "Level" }

type stringSliceValue struct {
	p       *[]string
	changed bool
}

func (v *stringSliceValue) Set(s string) error {
	var items []string
	if s != "" {
		var err error
		if items, err = csv.NewReader(strings.NewReader(s)).Read(); err != nil {
			return err
		}
	}
	if !v.changed {
		*v.p = items
		v.changed = true
		return nil
	}
	*v.p = append(*v.p, items...)
	return nil
}
func (v *stringSliceValue) String() string { return "[" + strings.Join(*v.p, ",") + "]" }
func (v *stringSliceValue) Type() string   { return "stringSlice" }

// mapValue is upstream's MapStringString ("k=v,...") and, with sep '<',
// LangleSeparatedMapStringString ("memory.available<100Mi,...").
type mapValue struct {
	p       *map[string]string
	sep     string
	changed bool
}

func (v *mapValue) Set(s string) error {
	if !v.changed || *v.p == nil {
		*v.p = map[string]string{}
		v.changed = true
	}
	for _, pair := range strings.Split(s, ",") {
		if pair == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, v.sep)
		if !ok {
			return fmt.Errorf("malformed pair, expect string%sstring", v.sep)
		}
		(*v.p)[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}
func (v *mapValue) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(*v.p)) {
		pairs = append(pairs, k+v.sep+(*v.p)[k])
	}
	return strings.Join(pairs, ",")
}
func (v *mapValue) Type() string { return "mapStringString" }

// labelsValue is upstream's ConfigurationMap for --node-labels: always
// accumulates, and a key without "=" gets an empty value.
type labelsValue struct{ p map[string]string }

func (v labelsValue) Set(s string) error {
	for _, pair := range strings.Split(s, ",") {
		if pair == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		v.p[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}
func (v labelsValue) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(v.p)) {
		pairs = append(pairs, k+"="+v.p[k])
	}
	return strings.Join(pairs, ",")
}
func (v labelsValue) Type() string { return "mapStringString" }

type featureGatesValue struct {
	p       *map[string]bool
	changed bool
}

func (v *featureGatesValue) Set(s string) error {
	m, err := features.Parse(s)
	if err != nil {
		return err
	}
	if !v.changed || *v.p == nil {
		*v.p = map[string]bool{}
		v.changed = true
	}
	maps.Copy(*v.p, m)
	return nil
}
func (v *featureGatesValue) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(*v.p)) {
		pairs = append(pairs, fmt.Sprintf("%s=%t", k, (*v.p)[k]))
	}
	return strings.Join(pairs, ",")
}
func (v *featureGatesValue) Type() string { return "mapStringBool" }

// taintsValue is upstream's RegisterWithTaintsVar: "key=value:Effect,key:Effect".
type taintsValue struct{ p *[]corev1.Taint }

func (v taintsValue) Set(s string) error {
	var taints []corev1.Taint
	seen := map[string]bool{}
	for _, spec := range strings.Split(s, ",") {
		if spec == "" {
			continue
		}
		t, err := parseTaint(spec)
		if err != nil {
			return err
		}
		id := t.Key + ":" + string(t.Effect)
		if seen[id] {
			return fmt.Errorf("duplicated taints with the same key and effect: %v", t)
		}
		seen[id] = true
		taints = append(taints, t)
	}
	*v.p = taints
	return nil
}
func (v taintsValue) String() string {
	var specs []string
	for _, t := range *v.p {
		specs = append(specs, t.ToString())
	}
	return strings.Join(specs, ",")
}
func (v taintsValue) Type() string { return "[]v1.Taint" }

func parseTaint(spec string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(spec, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec: %v", spec)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if err := checkTaint(t); err != nil {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec %q: %v", spec, err)
	}
	return t, nil
}

func checkTaint(t corev1.Taint) error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("invalid taint key %q: %s", t.Key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
		return fmt.Errorf("invalid taint value %q: %s", t.Value, strings.Join(errs, "; "))
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("invalid taint effect %q, must be one of: %s, %s, %s", t.Effect, corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
}

// noopValue stands in for command-line-only flags when the command line is
// re-parsed over a loaded configuration: they were consumed by the first parse,
// and some values accumulate, so they must not be applied twice.
type noopValue struct{ typ string }

func (noopValue) Set(string) error { return nil }
func (noopValue) String() string   { return "" }
func (v noopValue) Type() string   { return v.typ }

// reservedMemoryValue is upstream's ReservedMemoryVar for --reserved-memory:
// "0:memory=1Gi,hugepages-1M=2Gi;1:memory=2Gi", repeatable.
type reservedMemoryValue struct {
	p       *[]kubeletconfigv1beta1.MemoryReservation
	changed bool
}

func (v *reservedMemoryValue) Set(s string) error {
	if s == "" {
		*v.p = nil
		return nil
	}
	if !v.changed || *v.p == nil {
		*v.p = []kubeletconfigv1beta1.MemoryReservation{}
		v.changed = true
	}
	for _, reservation := range strings.Split(s, ";") {
		node, limits, ok := strings.Cut(reservation, ":")
		if !ok || strings.Contains(limits, ":") {
			return fmt.Errorf("the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got %s", reservation)
		}
		id, err := strconv.ParseInt(node, 10, 32)
		if err != nil {
			return fmt.Errorf("failed to convert the NUMA node ID, expected integer, got %s", node)
		}
		r := kubeletconfigv1beta1.MemoryReservation{NumaNode: int32(id), Limits: corev1.ResourceList{}}
		for _, limit := range strings.Split(limits, ",") {
			name, quantity, ok := strings.Cut(limit, "=")
			if !ok || strings.Contains(quantity, "=") {
				return fmt.Errorf("the reserved limit has incorrect value, expected type=quantity, got %s", limit)
			}
			if name != string(corev1.ResourceMemory) && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
				return fmt.Errorf("memory type conversion error, unknown type: %q", name)
			}
			q, err := resource.ParseQuantity(quantity)
			if err != nil {
				return fmt.Errorf("failed to parse the quantity: %s", quantity)
			}
			r.Limits[corev1.ResourceName(name)] = q
		}
		*v.p = append(*v.p, r)
	}
	return nil
}
func (v *reservedMemoryValue) String() string {
	var out []string
	for _, r := range *v.p {
		var limits []string
		for name, q := range r.Limits {
			limits = append(limits, fmt.Sprintf("%s=%s", name, q.String()))
		}
		slices.Sort(limits)
		out = append(out, fmt.Sprintf("%d:%s", r.NumaNode, strings.Join(limits, ",")))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
func (v *reservedMemoryValue) Type() string { return "reserved-memory" }

// versionValue is upstream's verflag value: --version and --version=raw
// print the version and quit; --version=vX.Y.Z, which upstream uses to
// override the version it reports, is accepted and reported as not
// implemented.
type versionValue struct {
	show     *bool
	accepted map[string]string
}

func (v *versionValue) Set(s string) error {
	if s == "raw" {
		*v.show = true
		return nil
	}
	if strings.HasPrefix(s, "v") {
		v.accepted["version"] = s
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false, raw or vX.Y.Z: %w", err)
	}
	*v.show = b
	return nil
}
func (v *versionValue) String() string { return strconv.FormatBool(*v.show) }
func (v *versionValue) Type() string   { return "version" }

// acceptedValue is the value of an acceptedFlags flag: checked as upstream's
// type would check it, then kept as text in into[name].
type acceptedValue struct {
	name, typ, text string
	into            map[string]string
}

func (v *acceptedValue) Set(s string) error {
	var err error
	switch v.typ {
	case "bool":
		_, err = strconv.ParseBool(s)
	case "duration":
		_, err = time.ParseDuration(s)
	case "int32":
		_, err = strconv.ParseInt(s, 0, 32)
	}
	if err != nil {
		return err
	}
	v.text = s
	v.into[v.name] = s
	return nil
}
func (v *acceptedValue) String() string { return v.text }
func (v *acceptedValue) Type() string   { return v.typ }

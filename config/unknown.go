package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Unknown fields. Upstream decodes a config file strictly and, when that fails,
// decodes it again leniently and only logs the strict error, so a file written
// for a newer kubelet still loads. Taken alone that also swallows typos: a
// misspelt "maxPodz" silently leaves maxPods at its default. actorlet therefore
// splits unknown fields in two. A name that is a likely misspelling of a known
// field of the same object (equal ignoring case, or — for names longer than 4
// characters — within Damerau-Levenshtein distance 2) is an error that names the
// field it probably meant. Any other unknown name is accepted with one warning,
// as upstream's lenient fallback does. Every nesting level is checked.

// fieldScan is what walking one document against the KubeletConfiguration type found.
type fieldScan struct {
	typos   []string // error messages
	unknown []string // dotted paths of other unknown fields
	present []string // dotted paths of known fields the document sets
}

var (
	configType    = reflect.TypeFor[kubeletconfigv1beta1.KubeletConfiguration]()
	unmarshalType = reflect.TypeFor[json.Unmarshaler]()
)

func scanFields(doc map[string]any, file string) fieldScan {
	var s fieldScan
	s.walkStruct(doc, configType, "", file, true)
	return s
}

func (s *fieldScan) walkStruct(doc map[string]any, t reflect.Type, prefix, file string, record bool) {
	fields := jsonFields(t)
	for _, key := range slices.Sorted(maps.Keys(doc)) {
		path := joinPath(prefix, key)
		ft, ok := fields[key]
		if !ok {
			if guess := closestName(key, slices.Collect(maps.Keys(fields))); guess != "" {
				s.typos = append(s.typos, fmt.Sprintf("unknown field %q in %s (did you mean %q?)", path, file, joinPath(prefix, guess)))
			} else {
				s.unknown = append(s.unknown, path)
			}
			continue
		}
		if doc[key] == nil {
			continue
		}
		s.walkValue(doc[key], ft, path, file, record)
	}
}

func (s *fieldScan) walkValue(v any, t reflect.Type, path, file string, record bool) {
	// A zero value in a field that is not a pointer is what the field's
	// defaulting reads as unset: kubeadm, for one, writes every duration of
	// its KubeletConfiguration, unset ones as "0s". Such a field asks for
	// nothing, so it is not reported as set.
	if k := t.Kind(); k != reflect.Pointer && k != reflect.Map && k != reflect.Slice && isZeroJSON(v) {
		record = false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalType) {
		s.leaf(path, record)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if m, ok := v.(map[string]any); ok {
			s.walkStruct(m, t, path, file, record)
			return
		}
	case reflect.Slice, reflect.Array:
		s.leaf(path, record)
		if items, ok := v.([]any); ok {
			for i, item := range items {
				s.walkValue(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), file, false)
			}
		}
		return
	case reflect.Map:
		s.leaf(path, record)
		if m, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				s.walkValue(m[k], t.Elem(), fmt.Sprintf("%s[%s]", path, k), file, false)
			}
		}
		return
	}
	s.leaf(path, record)
}

// isZeroJSON reports whether a decoded scalar is a zero value: null, false,
// an empty string, the number 0, or a duration or quantity of 0 written as
// a string ("0s", "0"). Lists and maps are never zero here: an empty one
// differs from an absent one (evictionHard: {} turns the default
// thresholds off).
func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		if x == "" || x == "0" {
			return true
		}
		d, err := time.ParseDuration(x)
		return err == nil && d == 0
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case float64:
		return x == 0
	}
	return false
}

func (s *fieldScan) leaf(path string, record bool) {
	if record {
		s.present = append(s.present, path)
	}
}

// jsonFields maps the JSON names of t's fields to their types, flattening
// inline and embedded structs as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if (f.Anonymous && name == "") || strings.Contains(","+opts+",", ",inline,") {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// closestName returns the known name that name is most likely a misspelling
// of, or "" when none is close enough.
func closestName(name string, known []string) string {
	slices.Sort(known)
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	if len(name) <= 4 {
		return ""
	}
	best, bestDist := "", 3
	for _, k := range known {
		if d := osaDistance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// osaDistance is the optimal-string-alignment Damerau-Levenshtein distance:
// insertions, deletions, substitutions and adjacent transpositions.
func osaDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

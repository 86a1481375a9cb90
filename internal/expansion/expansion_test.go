package expansion

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"$(A)":        "1",
		"x$(A)y$(B)z": "x1ytwoz",
		"$$(A)":       "$(A)",
		"$$":          "$",
		"$(C)":        "$(C)",
		"$(A":         "$(A",
		"$A":          "$A",
		"a$":          "a$",
		"$()":         "$()",
		"$(A$$":       "$(A$",
		"$(A $(B)":    "$(A $(B)",
		"$(B)$":       "two$",
		"$$$(A)":      "$1",
		"$x$(A)":      "$x1",
	} {
		if got := Expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

package nodelogs

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// safeName is what a service name that passed validation may be.
var safeName = regexp.MustCompile(`^[a-zA-Z0-9\-_.:@]{1,256}$`)

// FuzzQuery parses and validates any query string: a query that passes
// names only safe services or one file, and every piece of it reaches
// journalctl as one argument of its own.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"query=kubelet&query=containerd&tailLines=10&boot=-1&pattern=err",
		"query=./apt/history.log",
		"query=/etc/passwd",
		"query=..&query=-f",
		"query=a%0Ab&sinceTime=2026-01-01T00:00:00Z&untilTime=2025-01-01T00:00:00Z",
		"query=a;rm+-rf",
		"pattern=(&query=x",
		"query=+++",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw)
		q, errs := Parse(v)
		if len(errs) > 0 {
			if q != nil {
				t.Fatalf("Parse(%q): a query and errors", raw)
			}
			return
		}
		if q == nil {
			return
		}
		for _, f := range q.Files {
			if !strings.ContainsAny(f, `/\`) {
				t.Errorf("Parse(%q): file %q without a slash", raw, f)
			}
		}
		if len(q.Validate(func(string) error { return nil })) > 0 {
			return
		}
		if len(q.Services) > maxServices || len(q.Files) > 1 || len(q.Files) == 1 && (len(q.Services) > 0 || q.set()) {
			t.Fatalf("Parse(%q): %+v passed validation", raw, q)
		}
		for _, s := range q.Services {
			if !safeName.MatchString(s) {
				t.Errorf("Parse(%q): service %q passed validation", raw, s)
			}
		}
		args := JournalArgs(q, q.Services)
		units := 0
		for _, a := range args {
			if strings.HasPrefix(a, "--unit=") {
				units++
			}
		}
		if units != len(q.Services) {
			t.Errorf("Parse(%q): %d units in %q, want %d", raw, units, args, len(q.Services))
		}
	})
}

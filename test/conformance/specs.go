package conformance

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// ReadSpecs reads a file of spec names: one full spec name (as
// e2e.test --list-tests prints it) a line; blank lines and lines starting
// with # are comments.
func ReadSpecs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	specs, err := parseSpecs(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}

func parseSpecs(r io.Reader) ([]string, error) {
	var specs []string
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if first, dup := seen[s]; dup {
			return nil, fmt.Errorf("line %d: %q is already on line %d", line, s, first)
		}
		seen[s] = line
		specs = append(specs, s)
	}
	return specs, sc.Err()
}

// FocusOf is the ginkgo focus regular expression that selects exactly
// specs. Ginkgo matches it against the suite's description, a space and
// the spec's full text, so a name is anchored at a space and the end.
func FocusOf(specs []string) string {
	quoted := make([]string, len(specs))
	for i, s := range specs {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return "(?:^| )(?:" + strings.Join(quoted, "|") + ")$"
}

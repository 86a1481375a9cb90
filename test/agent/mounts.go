package agent

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

// HostMount is one mount of the host's (the test's) mount namespace, as
// /proc/self/mountinfo shows it.
type HostMount struct {
	Point, FSType, Options string
}

// HostMounts reads /proc/self/mountinfo: the test runs in the host's mount
// namespace, where actorlet mounts.
func HostMounts(t testing.TB) []HostMount {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var ms []HostMount
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 6 || sep < 0 || sep+3 > len(fields) {
			continue
		}
		ms = append(ms, HostMount{Point: unescapeMountPath(fields[4]), FSType: fields[sep+1], Options: fields[sep+3]})
	}
	return ms
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// MountsAt are the host's mounts whose mount point is path.
func MountsAt(t testing.TB, path string) []HostMount {
	t.Helper()
	var at []HostMount
	for _, m := range HostMounts(t) {
		if m.Point == path {
			at = append(at, m)
		}
	}
	return at
}

// MountsUnder are the host's mount points at dir or below it, deepest
// first (the order to unmount them in).
func MountsUnder(t testing.TB, dir string) []string {
	t.Helper()
	var under []string
	for _, m := range HostMounts(t) {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			under = append(under, m.Point)
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	return under
}

// Package expansion is the Kubernetes API's $(VAR) syntax, as upstream's
// third_party/forked/golang/expansion: env values, command, args,
// subPathExpr and exec probes' commands use it.
package expansion

import "strings"

// Expand replaces $(VAR) references by their values, as the Kubernetes API
// defines it for env values, command, args and subPathExpr (upstream's
// third_party/forked/golang/expansion): $$ is an escaped $, a reference to
// a variable lookup does not know stays as written, and so does an
// unclosed "$(", after which scanning goes on.
func Expand(input string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	checkpoint := 0
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:i])
		rest := input[i+1:]
		advance := 1
		switch rest[0] {
		case '$':
			b.WriteByte('$')
		case '(':
			if end := strings.IndexByte(rest, ')'); end > 0 {
				name := rest[1:end]
				if v, ok := lookup(name); ok {
					b.WriteString(v)
				} else {
					b.WriteString("$(" + name + ")")
				}
				advance = end + 1
			} else {
				b.WriteString("$(")
			}
		default:
			b.WriteByte('$')
			b.WriteByte(rest[0])
		}
		i += advance
		checkpoint = i + 1
	}
	return b.String() + input[checkpoint:]
}

package prober

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expandStatic expands $(VAR) in an exec probe's command from the
// container's literal env values only, as upstream's
// ExpandContainerCommandOnlyStatic: a variable set from a source
// (valueFrom) expands to "", one not defined stays as written, $$ is a $.
func expandStatic(cmd []string, env []v1.EnvVar) []string {
	if len(cmd) == 0 {
		return cmd
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, len(cmd))
	for i, s := range cmd {
		out[i] = expand(s, vars)
	}
	return out
}

// expand is the Kubernetes API's $(VAR) syntax (upstream's
// third_party/forked/golang/expansion): $$ is an escaped $, a reference to
// an unknown variable and an unclosed "$(" stay as written.
func expand(input string, vars map[string]string) string {
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
				if v, ok := vars[name]; ok {
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

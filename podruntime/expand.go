package podruntime

import "strings"

// expand replaces $(VAR) references by their values, as the Kubernetes API
// defines it for env values, command and args: $$ escapes a $, and a
// reference to an unknown variable, or an unclosed one, stays as written.
func expand(input string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 >= len(input) {
			b.WriteByte(input[i])
			continue
		}
		switch next := input[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(input[i+2:], ')')
			if end < 0 {
				b.WriteString(input[i:])
				return b.String()
			}
			name := input[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(input[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

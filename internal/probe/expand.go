package probe

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/expansion"
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
		out[i] = expansion.Expand(s, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	}
	return out
}

package podruntime

import (
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/envfile"
	"github.com/actorlet/actorlet/internal/services"
	"github.com/actorlet/actorlet/internal/volume"
)

// The node's Services watcher is what Options.Services takes.
var _ Services = (*services.Watcher)(nil)

// serviceEnvFor is the service variables of a pod of namespace.
func serviceEnvFor(all []*v1.Service, namespace string, links bool) map[string]string {
	return services.EnvFor(all, namespace, links)
}

// fileKeyRefValue is upstream's fileKeyRef (feature EnvFiles): the key's
// value in an env file of one of the pod's volumes, read inside the
// volume only. A key that is missing or empty is left out when optional,
// as upstream; a file that cannot be read or parsed is upstream's bare
// "couldn't parse env file".
func fileKeyRefValue(ref *v1.FileKeySelector, vols map[string]volume.Mounted) (string, bool, error) {
	vol, ok := vols[ref.VolumeName]
	if !ok || vol.Path == "" {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	v, err := envfile.ValueIn(vol.Path, ref.Path, ref.Key)
	if err != nil {
		// Upstream's whole answer: the parser's detail (the file's host
		// path, its line) stays on the node.
		return "", false, fmt.Errorf("couldn't parse env file")
	}
	if v == "" {
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.Key, filepath.Join(vol.Path, ref.Path))
	}
	return v, true, nil
}

package logs

import (
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultPodLogsDir is where pods' logs go unless configured, as upstream's
// podLogsRootDirectory.
const DefaultPodLogsDir = "/var/log/pods"

// PodLogsDir is the pod's log directory, ROOT/NAMESPACE_NAME_UID, which
// kubectl logs and log collectors expect. root "" means DefaultPodLogsDir.
func PodLogsDir(root, namespace, name string, uid types.UID) string {
	if root == "" {
		root = DefaultPodLogsDir
	}
	return filepath.Join(root, strings.Join([]string{namespace, name, string(uid)}, "_"))
}

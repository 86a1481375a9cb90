package volume

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

// mountTmpfs makes dir a tmpfs of at most size bytes (nil or zero: tmpfs's
// default), unless it is one already: a restarted actorlet finds the tmpfs
// of a running pod mounted, with the pod's data in it, and must not mount
// over it.
func (h *Host) mountTmpfs(dir string, size *resource.Quantity) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	notMnt, err := h.Mounter.IsLikelyNotMountPoint(dir)
	if err != nil {
		return err
	}
	if !notMnt {
		return nil
	}
	var opts []string
	if size != nil && size.Value() > 0 {
		opts = append(opts, fmt.Sprintf("size=%d", size.Value()))
	}
	if err := h.Mounter.MountSensitiveWithoutSystemd("tmpfs", dir, "tmpfs", opts, nil); err != nil {
		return fmt.Errorf("mounting tmpfs at %s: %w", dir, err)
	}
	return nil
}

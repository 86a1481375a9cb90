package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/actorlet/actorlet/test/csihost"
	"github.com/actorlet/actorlet/test/env"
)

// StorageDriverFile describes the hostpath CSI driver, as the run installs
// it, to the e2e storage testsuites (e2e.test -storage.testdriver), under
// the repository's root.
const StorageDriverFile = "test/conformance/hostpath-driver.yaml"

// externalStoragePrefix begins the names of the specs of the e2e storage
// testsuites run against the driver of a -storage.testdriver file.
const externalStoragePrefix = "External Storage [Driver: "

// NeedsStorageDriver tells whether specs run the storage testsuites
// against a CSI driver installed on the node (storage.txt): the run then
// installs the hostpath driver (StorageDriverFile).
func NeedsStorageDriver(specs []string) bool { return anyPrefixed(specs, externalStoragePrefix) }

// anyPrefixed tells whether a spec's name begins with prefix.
func anyPrefixed(specs []string, prefix string) bool {
	return slices.ContainsFunc(specs, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// storageDriver is the hostpath CSI driver installed on the run's node as
// a cluster's CSI driver is: registered with the node's agent through its
// plugins_registry, with external-provisioner, external-attacher, the
// test resizer in external-resizer's place, the storage, attach-detach and
// ephemeral volume controllers, its CSIDriver
// (fsGroupPolicy File, as csi-driver-host-path's deployment has it) and
// its StorageClass.
type storageDriver struct {
	d        *csihost.Driver
	dir, log string
}

// storageSidecars builds the sidecars: called before the agent starts,
// so that a cold build of minutes does not hold the runtime lock.
func storageSidecars(e *env.Env) (string, error) { return csihost.Sidecars(e) }

// startStorageDriver starts the driver for the node whose kubelet root
// is kubeletRoot; its processes' output goes to logPath when it stops.
func startStorageDriver(ctx context.Context, e *env.Env, kubeletRoot, sidecars, logPath string, logf func(string, ...any)) (*storageDriver, error) {
	dir, err := os.MkdirTemp(e.StateDir, "conformance-csi-")
	if err != nil {
		return nil, err
	}
	d, err := csihost.Start(ctx, e, csihost.Config{
		KubeletRoot: kubeletRoot, Sidecars: true, AttachDetach: true,
		FSGroupPolicy: storagev1.FileFSGroupPolicy, Resizer: true, EphemeralVolumes: true,
	}, dir, sidecars, logf)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &storageDriver{d: d, dir: dir, log: logPath}, nil
}

// stop deletes what the driver provisioned, stops it and its sidecars,
// and keeps their output.
func (s *storageDriver) stop() error {
	s.d.Stop()
	err := os.WriteFile(s.log, []byte(s.d.Log()), 0o644)
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

// storageDriverFlag is e2e.test's flag that describes the driver.
func storageDriverFlag() (string, error) {
	root, err := env.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, StorageDriverFile)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the storage driver's description: %w", err)
	}
	return "--storage.testdriver=" + path, nil
}

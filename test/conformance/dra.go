package conformance

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/actorlet/actorlet/test/csihost"
	"github.com/actorlet/actorlet/test/env"
)

// draPrefix begins the names of e2e.test's DRA specs (test/e2e/dra).
const draPrefix = "[sig-node] [DRA] "

// DRAControllers are the kube-controller-manager controllers the DRA specs
// need beside the scheduler's allocation, which the environment's
// kube-controller-manager does not run (csihost.StorageControllers says
// why the harness does not change its list): claims made from a pod's
// templates, and reservations removed once their pods are done; pods
// evicted for a device's NoExecute taint; the DaemonSets and resource
// quotas some specs make.
var DRAControllers = []string{"resourceclaim-controller", "device-taint-eviction-controller",
	"daemonset-controller", "resourcequota-controller"}

// DRARootDir is the agent's root directory in a run of the DRA specs,
// upstream's default: the specs that deploy the sample device plugin mount
// its device-plugins directory from there, and the test driver's sockets
// under ROOT/plugins/DRIVER must stay within a unix socket's path length
// (a driver's name and a UUID already take most of it).
const DRARootDir = "/var/lib/kubelet"

// forgetCheckpoints removes the state files an agent left at the top of
// root and its device plugin checkpoint: the agents share DRARootDir, and
// each run starts from a node that holds nothing, as it does in its own
// root elsewhere.
func forgetCheckpoints(root string) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	paths := []string{filepath.Join(root, "device-plugins", "kubelet_internal_checkpoint")}
	for _, e := range entries {
		if e.Type().IsRegular() {
			paths = append(paths, filepath.Join(root, e.Name()))
		}
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// NeedsDRA tells whether specs run e2e.test's DRA specs (dra.txt): the run
// then starts DRAControllers, and the agent is rooted at DRARootDir. Their test driver runs in e2e.test, through
// pods of the image hack/images/e2e builds as csi-driver-host-path's
// (test/dra/hostpathproxy), with its sockets in the agent's root
// directory (e2e.test's --kubelet-root-dir).
func NeedsDRA(specs []string) bool { return anyPrefixed(specs, draPrefix) }

// draControllers is the kube-controller-manager of DRAControllers.
type draControllers struct {
	p   *csihost.Process
	log string
}

func startDRAControllers(e *env.Env, logPath string) (*draControllers, error) {
	p, err := csihost.StartKubeControllers(e, DRAControllers...)
	if err != nil {
		return nil, err
	}
	return &draControllers{p: p, log: logPath}, nil
}

// stop ends it and keeps its output.
func (d *draControllers) stop() error {
	d.p.Stop()
	return os.WriteFile(d.log, []byte(d.p.Logs()), 0o644)
}

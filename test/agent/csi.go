package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/csihost"
	"github.com/actorlet/actorlet/test/env"
)

// CSIDriverConfig says how to run the project's hostpath CSI driver
// (test/csi/hostpathplugin) for a test.
type CSIDriverConfig = csihost.Config

// HostpathDriver is the hostpath driver's default name.
const HostpathDriver = csihost.HostpathDriver

// AttachDetachController is kube-controller-manager's name of the
// attach-detach controller, which the environment's does not run.
const AttachDetachController = csihost.AttachDetachController

// EphemeralVolumeController is kube-controller-manager's name of the
// controller that makes generic ephemeral volumes' claims.
const EphemeralVolumeController = csihost.EphemeralVolumeController

// CSIDriver is the hostpath CSI driver running as a host process for a
// test, and the sidecars of its controller side when asked for. Its
// cleanup deletes what the sidecars provisioned while they still run,
// then stops every process.
type CSIDriver struct {
	*csihost.Driver
}

// StartCSIDriver builds the driver (and, with cfg.Sidecars, the sidecars)
// and runs it for the test, waiting until its socket answers.
func StartCSIDriver(t testing.TB, e *env.Env, cfg CSIDriverConfig) *CSIDriver {
	t.Helper()
	var sidecars string
	if cfg.Sidecars {
		if !e.WithAPIServer {
			t.Fatal("the CSI sidecars need the API server: env.Require(t, env.WithAPIServer())")
		}
		sidecars = CSISidecars(t, e)
	}
	d, err := csihost.Start(context.Background(), e, cfg, t.TempDir(), sidecars, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			for _, p := range d.Processes() {
				t.Logf("%s's log (end):\n%s", p.Name, env.Tail(p.Logs(), 60))
			}
		}
	})
	return &CSIDriver{d}
}

// StartKubeControllers runs, for the test, a kube-controller-manager of
// the environment's build with only the given controllers, beside the
// environment's (see csihost.StorageControllers for why not in it); it
// stops at the test's cleanup and its log is printed if the test failed.
func StartKubeControllers(t testing.TB, e *env.Env, controllers ...string) {
	t.Helper()
	p, err := csihost.StartKubeControllers(e, controllers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- kube-controller-manager (%s)\n%s", strings.Join(controllers, ","), p.Logs())
		}
	})
}

var sidecarsOnce struct {
	sync.Once
	dir string
	err error
}

// CSISidecars builds the sidecars once per test binary (csihost.Sidecars)
// and returns their directory. StartCSIDriver calls it; a test that holds
// the runtime lock when it starts the driver (a cluster node's test) calls
// it first, so that a cold build of minutes does not keep other test
// binaries from the runtime.
func CSISidecars(t testing.TB, e *env.Env) string {
	t.Helper()
	sidecarsOnce.Do(func() {
		start := time.Now()
		sidecarsOnce.dir, sidecarsOnce.err = csihost.Sidecars(e)
		if took := time.Since(start); took > 10*time.Second {
			t.Logf("built the CSI sidecars in %v", took.Round(time.Second))
		}
	})
	if sidecarsOnce.err != nil {
		t.Fatal(sidecarsOnce.err)
	}
	return sidecarsOnce.dir
}

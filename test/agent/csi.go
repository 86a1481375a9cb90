package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/test/env"
)

// CSIDriverConfig says how to run the project's hostpath CSI driver
// (test/csi/hostpathplugin) for a test.
type CSIDriverConfig struct {
	// Name is the driver's name; the default HostpathDriver.
	Name string
	// NodeID is what NodeGetInfo returns; the default "hostpath-" and the
	// environment's node name.
	NodeID string
	// KubeletRoot, when set, is the root directory of a kubelet the
	// driver registers with: its CSI socket is then
	// KUBELET_ROOT/plugins/NAME/csi.sock and its registration socket
	// KUBELET_ROOT/plugins_registry/NAME-reg.sock, where the kubelet
	// looks, as with node-driver-registrar. Unset, the driver registers
	// with no kubelet and its socket is in a temporary directory.
	KubeletRoot string
	// Sidecars runs external-provisioner and external-attacher (hack/csi)
	// on the driver's socket with the environment's admin kubeconfig, and
	// a kube-controller-manager with the storage controllers (the PV
	// binder, PV and PVC protection), and makes the driver's CSIDriver
	// object (attachRequired) and a StorageClass (Immediate binding,
	// Delete, expansion allowed), all removed at cleanup. A cold build of
	// the sidecars takes minutes.
	Sidecars bool
	// AttachDetach adds the attach-detach controller to the sidecars'
	// kube-controller-manager: it makes the VolumeAttachment of every
	// volume of a pod bound to a node that has the controller-managed
	// annotation, which external-attacher then attaches, and deletes it
	// once no pod there needs the volume and the node no longer lists it
	// in use.
	AttachDetach bool
	// Resizer, with Sidecars, runs external-resizer's controller part
	// (resizer.go): a claim of the StorageClass whose request grows is
	// expanded by the driver's ControllerExpandVolume, its PV grown, and
	// the claim left to the node (NodeResizePending) when the driver
	// wants the node to finish.
	Resizer bool
}

// HostpathDriver is the hostpath driver's default name.
const HostpathDriver = "hostpath.csi.actorlet.example.com"

// CSIDriver is the hostpath CSI driver running as a host process, and the
// sidecars of its controller side when asked for. Its cleanup deletes
// what the sidecars provisioned (the PVs of its driver and their claims)
// while they still run, then stops every process.
type CSIDriver struct {
	CSIDriverConfig
	// Endpoint is the path of the driver's CSI socket.
	Endpoint string
	// StateDir holds the volumes, one directory each under
	// StateDir/volumes, and the driver's record of them.
	StateDir string
	// StorageClass is the name of the driver's StorageClass (with
	// Sidecars).
	StorageClass string

	t     testing.TB
	env   *env.Env
	admin kubernetes.Interface
	procs []*hostProcess
}

// StartCSIDriver builds the driver (and, with cfg.Sidecars, the sidecars)
// and runs it for the test, waiting until its socket answers.
func StartCSIDriver(t testing.TB, e *env.Env, cfg CSIDriverConfig) *CSIDriver {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = HostpathDriver
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "hostpath-" + e.NodeName
	}
	dir := t.TempDir()
	d := &CSIDriver{CSIDriverConfig: cfg, StateDir: filepath.Join(dir, "state"), t: t, env: e,
		Endpoint: filepath.Join(dir, "csi.sock")}
	args := []string{"-drivername", cfg.Name, "-nodeid", cfg.NodeID, "-statedir", d.StateDir}
	if cfg.KubeletRoot != "" {
		d.Endpoint = filepath.Join(cfg.KubeletRoot, "plugins", cfg.Name, "csi.sock")
		args = append(args, "-registration-dir", filepath.Join(cfg.KubeletRoot, "plugins_registry"))
	}
	args = append(args, "-endpoint", d.Endpoint)

	bin := filepath.Join(dir, "hostpathplugin")
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin, "./test/csi/hostpathplugin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the hostpath CSI driver: %v\n%s", err, out)
	}
	// A test's cleanups run last-registered first: the sidecars' are
	// registered after the driver's, so they stop first, and the
	// provisioned volumes go while both still run.
	t.Cleanup(d.stop)
	d.procs = append(d.procs, startHostProcess(t, "hostpathplugin", bin, args...))
	Eventually(t, "the CSI driver's socket", 30*time.Second, func() error {
		_, err := os.Stat(d.Endpoint)
		return err
	})
	if cfg.Sidecars {
		d.startSidecars()
	}
	return d
}

// VolumeDir is where the volume with the given ID keeps its data.
func (d *CSIDriver) VolumeDir(id string) string { return filepath.Join(d.StateDir, "volumes", id) }

// Log is what each of the driver's processes wrote so far, by name.
func (d *CSIDriver) Log() string {
	var b strings.Builder
	for _, p := range d.procs {
		fmt.Fprintf(&b, "--- %s\n%s", p.name, p.logs())
	}
	return b.String()
}

// storageControllers are the kube-controller-manager controllers that
// dynamic provisioning needs: the binder hands a claim to its
// StorageClass's provisioner and binds the PV it makes; without the
// protection controllers a deleted claim or PV keeps its finalizer for
// ever. The environment's kube-controller-manager runs none of them, and
// the harness does not change its controllers: every checkout on the
// machine shares it, and `hack/node-env up` of another checkout would
// restart it with its own list, under a running test. So the harness runs
// a second one, of the same binary, with these alone, for the test.
var storageControllers = []string{
	"persistentvolume-binder-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
}

// AttachDetachController is kube-controller-manager's name of the
// attach-detach controller, which the environment's does not run either.
const AttachDetachController = "persistentvolume-attach-detach-controller"

// StartKubeControllers runs, for the test, a kube-controller-manager of
// the environment's build with only the given controllers, beside the
// environment's (see storageControllers for why not in it); it stops at
// the test's cleanup and its log is printed if the test failed.
func StartKubeControllers(t testing.TB, e *env.Env, controllers ...string) {
	t.Helper()
	p := startKubeControllers(t, e, controllers...)
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- kube-controller-manager (%s)\n%s", strings.Join(controllers, ","), p.logs())
		}
	})
}

func startKubeControllers(t testing.TB, e *env.Env, controllers ...string) *hostProcess {
	t.Helper()
	return startHostProcess(t, "kube-controller-manager", filepath.Join(e.KubeBin, "kube-controller-manager"),
		"--kubeconfig="+e.AdminKubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers="+strings.Join(controllers, ","))
}

var sidecarsOnce struct {
	sync.Once
	dir string
	err error
}

// CSISidecars builds the sidecars once per test binary (hack/node-env
// csi-sidecars, a no-op while hack/csi is unchanged since the last build)
// and returns their directory. StartCSIDriver calls it; a test that holds
// the runtime lock when it starts the driver (a cluster node's test) calls
// it first, so that a cold build of minutes does not keep other test
// binaries from the runtime.
func CSISidecars(t testing.TB, e *env.Env) string {
	t.Helper()
	sidecarsOnce.Do(func() {
		start := time.Now()
		out, err := exec.Command(e.Script, "csi-sidecars").Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				out = append(out, ee.Stderr...)
			}
			sidecarsOnce.err = fmt.Errorf("%s csi-sidecars: %v\n%s", e.Script, err, out)
			return
		}
		sidecarsOnce.dir = strings.TrimSpace(string(out))
		if took := time.Since(start); took > 10*time.Second {
			t.Logf("built the CSI sidecars in %v", took.Round(time.Second))
		}
	})
	if sidecarsOnce.err != nil {
		t.Fatal(sidecarsOnce.err)
	}
	return sidecarsOnce.dir
}

func (d *CSIDriver) startSidecars() {
	t := d.t
	t.Helper()
	if !d.env.WithAPIServer {
		t.Fatal("the CSI sidecars need the API server: env.Require(t, env.WithAPIServer())")
	}
	bin := CSISidecars(t, d.env)
	d.admin = d.env.AdminClient(t)
	ctx := context.Background()

	// The objects a driver's installation makes: its CSIDriver and a
	// StorageClass. A test killed before its cleanup leaves them; they
	// are made anew.
	attach, podInfo := true, false
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d.Name}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: &attach, PodInfoOnMount: &podInfo,
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	d.StorageClass = strings.ReplaceAll(d.Name, ".", "-")
	immediate, deletePolicy, expand := storagev1.VolumeBindingImmediate, v1.PersistentVolumeReclaimDelete, true
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: d.StorageClass}, Provisioner: d.Name,
		VolumeBindingMode: &immediate, ReclaimPolicy: &deletePolicy, AllowVolumeExpansion: &expand}
	_ = d.admin.StorageV1().CSIDrivers().Delete(ctx, d.Name, metav1.DeleteOptions{})
	_ = d.admin.StorageV1().StorageClasses().Delete(ctx, d.StorageClass, metav1.DeleteOptions{})
	Eventually(t, "the CSIDriver and StorageClass created", 30*time.Second, func() error {
		if _, err := d.admin.StorageV1().CSIDrivers().Create(ctx, csiDriver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err := d.admin.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})

	common := []string{"--csi-address=" + d.Endpoint, "--kubeconfig=" + d.env.AdminKubeconfig,
		"--leader-election=false", "--v=3", "--timeout=30s"}
	controllers := storageControllers
	if d.AttachDetach {
		controllers = append(slices.Clone(controllers), AttachDetachController)
	}
	d.procs = append(d.procs,
		startKubeControllers(t, d.env, controllers...),
		startHostProcess(t, "csi-provisioner", filepath.Join(bin, "csi-provisioner"), common...),
		startHostProcess(t, "csi-attacher", filepath.Join(bin, "csi-attacher"), common...))
	t.Cleanup(d.deleteProvisioned)
	if d.Resizer {
		d.startResizer()
	}
}

// deleteProvisioned deletes the claims of the driver's volumes and the
// volumes, and waits until the provisioner has deleted them: a PV it made
// carries its finalizer, which nothing removes once it is stopped. Then
// the CSIDriver and the StorageClass go.
func (d *CSIDriver) deleteProvisioned() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ours := func() []v1.PersistentVolume {
		pvs, err := d.admin.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			d.t.Logf("cleanup: list PVs: %v", err)
			return nil
		}
		var mine []v1.PersistentVolume
		for _, pv := range pvs.Items {
			if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == d.Name {
				mine = append(mine, pv)
			}
		}
		return mine
	}
	for _, pv := range ours() {
		if c := pv.Spec.ClaimRef; c != nil {
			_ = d.admin.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		}
		_ = d.admin.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	}
	for len(ours()) > 0 && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
	}
	if left := ours(); len(left) > 0 {
		d.t.Logf("cleanup: PVs of %s left: %d", d.Name, len(left))
	}
	_ = d.admin.StorageV1().StorageClasses().Delete(ctx, d.StorageClass, metav1.DeleteOptions{})
	_ = d.admin.StorageV1().CSIDrivers().Delete(ctx, d.Name, metav1.DeleteOptions{})
}

// stop stops the driver's processes, sidecars first, and shows their logs
// if the test failed.
func (d *CSIDriver) stop() {
	for i := len(d.procs) - 1; i >= 0; i-- {
		d.procs[i].stop()
	}
	if d.t.Failed() {
		for _, p := range d.procs {
			d.t.Logf("%s's log (end):\n%s", p.name, env.Tail(p.logs(), 60))
		}
	}
}

// hostProcess is a helper program of a test run on the host, not in a
// pod, with its output kept.
type hostProcess struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

func startHostProcess(t testing.TB, name, bin string, args ...string) *hostProcess {
	t.Helper()
	p := &hostProcess{name: name, cmd: exec.Command(bin, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// stop sends SIGTERM, and SIGKILL after 10 s.
func (p *hostProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *hostProcess) logs() string { return p.out.String() }

// lockedBuffer is an output shared by a process's writer and the test's
// readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

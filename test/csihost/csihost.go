// Package csihost runs the project's hostpath CSI driver
// (test/csi/hostpathplugin) as a host process, with the sidecars of its
// controller side (external-provisioner, external-attacher and a
// kube-controller-manager of the storage controllers) when asked: the one
// installation that the Go tests (test/agent.StartCSIDriver) and the
// storage conformance run (test/conformance) share.
package csihost

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/actorlet/actorlet/internal/testutil"
	"github.com/actorlet/actorlet/test/env"
)

// Config says how to run the driver.
type Config struct {
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
	// with no kubelet and its socket is in the driver's directory.
	KubeletRoot string
	// Sidecars runs external-provisioner and external-attacher (hack/csi)
	// on the driver's socket with the environment's admin kubeconfig, and
	// a kube-controller-manager with the storage controllers (the PV
	// binder, PV and PVC protection), and makes the driver's CSIDriver
	// object (attachRequired) and a StorageClass (Immediate binding,
	// Delete, expansion allowed), all removed when the driver stops. A
	// cold build of the sidecars takes minutes.
	Sidecars bool
	// AttachDetach adds the attach-detach controller to the sidecars'
	// kube-controller-manager: it makes the VolumeAttachment of every
	// volume of a pod bound to a node that has the controller-managed
	// annotation, which external-attacher then attaches, and deletes it
	// once no pod there needs the volume and the node no longer lists it
	// in use.
	AttachDetach bool
	// FSGroupPolicy is the CSIDriver's fsGroupPolicy (with Sidecars);
	// unset, the API's default, ReadWriteOnceWithFSType, under which a
	// kubelet applies no fsGroup to the driver's volumes, which have no
	// fsType.
	FSGroupPolicy storagev1.FSGroupPolicy
	// Resizer, with Sidecars, runs external-resizer's controller part
	// (resizer.go): a claim of the StorageClass whose request grows is
	// expanded by the driver's ControllerExpandVolume, its PV grown, and
	// the claim left to the node (NodeResizePending) when the driver
	// wants the node to finish.
	Resizer bool
	// EphemeralVolumes, with Sidecars, adds kube-controller-manager's
	// ephemeral volume controller to the sidecars': it makes the claim of
	// each generic ephemeral volume of a pod.
	EphemeralVolumes bool
}

// HostpathDriver is the hostpath driver's default name.
const HostpathDriver = "hostpath.csi.actorlet.example.com"

// StorageClassOf is the name of the StorageClass that a driver with
// Sidecars makes.
func StorageClassOf(driver string) string { return strings.ReplaceAll(driver, ".", "-") }

// Driver is the driver running as a host process, and the sidecars of its
// controller side when asked for.
type Driver struct {
	Config
	// Endpoint is the path of the driver's CSI socket.
	Endpoint string
	// StateDir holds the volumes, one directory each under
	// StateDir/volumes, and the driver's record of them.
	StateDir string
	// StorageClass is the name of the driver's StorageClass (with
	// Sidecars).
	StorageClass string

	env   *env.Env
	admin kubernetes.Interface
	logf  func(format string, args ...any)
	procs []*Process
	// provisioned: the sidecars run, and Stop deletes what they made.
	provisioned bool
	// stopResizer stops the resizer (Resizer); nil when none runs.
	stopResizer func()
}

// Start builds the driver into dir, a directory the caller owns and
// removes, runs it with its state there, and waits until its socket
// answers; with cfg.Sidecars it then makes the CSIDriver and StorageClass
// and starts the sidecars from sidecarsDir (Sidecars). logf gets what
// Stop could not clean up. On error, what started is stopped.
func Start(ctx context.Context, e *env.Env, cfg Config, dir, sidecarsDir string, logf func(string, ...any)) (*Driver, error) {
	if cfg.Name == "" {
		cfg.Name = HostpathDriver
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "hostpath-" + e.NodeName
	}
	d := &Driver{Config: cfg, StateDir: filepath.Join(dir, "state"), env: e, logf: logf,
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
		return nil, err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/csi/hostpathplugin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the hostpath CSI driver: %v\n%s", err, out)
	}
	p, err := StartProcess("hostpathplugin", bin, args...)
	if err != nil {
		return nil, err
	}
	d.procs = append(d.procs, p)
	if err := poll(ctx, 30*time.Second, func() error {
		_, err := os.Stat(d.Endpoint)
		return err
	}); err != nil {
		d.Stop()
		return nil, fmt.Errorf("the CSI driver's socket: %w\n%s", err, d.Log())
	}
	if cfg.Sidecars {
		if err := d.startSidecars(ctx, sidecarsDir); err != nil {
			d.Stop()
			return nil, err
		}
		if cfg.Resizer {
			d.startResizer()
		}
	}
	return d, nil
}

// VolumeDir is where the volume with the given ID keeps its data.
func (d *Driver) VolumeDir(id string) string { return filepath.Join(d.StateDir, "volumes", id) }

// Log is what each of the driver's processes wrote so far, by name.
func (d *Driver) Log() string {
	var b strings.Builder
	for _, p := range d.procs {
		fmt.Fprintf(&b, "--- %s\n%s", p.Name, p.Logs())
	}
	return b.String()
}

// Processes are the driver's processes, the driver first.
func (d *Driver) Processes() []*Process { return d.procs }

// StorageControllers are the kube-controller-manager controllers that
// dynamic provisioning needs: the binder hands a claim to its
// StorageClass's provisioner and binds the PV it makes; without the
// protection controllers a deleted claim or PV keeps its finalizer for
// ever. The environment's kube-controller-manager runs none of them, and
// the harness does not change its controllers: every checkout on the
// machine shares it, and `hack/node-env up` of another checkout would
// restart it with its own list, under a running test. So the driver's
// sidecars include a second one, of the same binary, with these alone.
var StorageControllers = []string{
	"persistentvolume-binder-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
}

// AttachDetachController is kube-controller-manager's name of the
// attach-detach controller, which the environment's does not run either.
const AttachDetachController = "persistentvolume-attach-detach-controller"

// EphemeralVolumeController is kube-controller-manager's name of the
// controller that makes the claim of each generic ephemeral volume.
const EphemeralVolumeController = "ephemeral-volume-controller"

// StartKubeControllers runs a kube-controller-manager of the
// environment's build with only the given controllers, beside the
// environment's (see StorageControllers for why not in it).
func StartKubeControllers(e *env.Env, controllers ...string) (*Process, error) {
	return StartProcess("kube-controller-manager", filepath.Join(e.KubeBin, "kube-controller-manager"),
		"--kubeconfig="+e.AdminKubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers="+strings.Join(controllers, ","))
}

// Sidecars builds the sidecars (hack/node-env csi-sidecars, a no-op while
// hack/csi is unchanged since the last build) and returns their
// directory.
func Sidecars(e *env.Env) (string, error) {
	out, err := exec.Command(e.Script, "csi-sidecars").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			out = append(out, ee.Stderr...)
		}
		return "", fmt.Errorf("%s csi-sidecars: %v\n%s", e.Script, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (d *Driver) startSidecars(ctx context.Context, bin string) error {
	if !d.env.WithAPIServer {
		return fmt.Errorf("the CSI sidecars need the API server")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", d.env.AdminKubeconfig)
	if err != nil {
		return err
	}
	if d.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}

	// The objects a driver's installation makes: its CSIDriver and a
	// StorageClass. A run killed before its cleanup leaves them; they
	// are made anew.
	attach, podInfo := true, false
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d.Name}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: &attach, PodInfoOnMount: &podInfo,
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	if d.FSGroupPolicy != "" {
		policy := d.FSGroupPolicy
		csiDriver.Spec.FSGroupPolicy = &policy
	}
	d.StorageClass = StorageClassOf(d.Name)
	immediate, deletePolicy, expand := storagev1.VolumeBindingImmediate, v1.PersistentVolumeReclaimDelete, true
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: d.StorageClass}, Provisioner: d.Name,
		VolumeBindingMode: &immediate, ReclaimPolicy: &deletePolicy, AllowVolumeExpansion: &expand}
	_ = d.admin.StorageV1().CSIDrivers().Delete(ctx, d.Name, metav1.DeleteOptions{})
	_ = d.admin.StorageV1().StorageClasses().Delete(ctx, d.StorageClass, metav1.DeleteOptions{})
	if err := poll(ctx, 30*time.Second, func() error {
		if _, err := d.admin.StorageV1().CSIDrivers().Create(ctx, csiDriver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err := d.admin.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("the CSIDriver and StorageClass created: %w", err)
	}
	d.provisioned = true

	common := []string{"--csi-address=" + d.Endpoint, "--kubeconfig=" + d.env.AdminKubeconfig,
		"--leader-election=false", "--v=3", "--timeout=30s"}
	controllers := StorageControllers
	if d.AttachDetach {
		controllers = append(slices.Clone(controllers), AttachDetachController)
	}
	if d.EphemeralVolumes {
		controllers = append(slices.Clone(controllers), EphemeralVolumeController)
	}
	kcm, err := StartKubeControllers(d.env, controllers...)
	if err != nil {
		return err
	}
	d.procs = append(d.procs, kcm)
	for _, name := range []string{"csi-provisioner", "csi-attacher"} {
		p, err := StartProcess(name, filepath.Join(bin, name), common...)
		if err != nil {
			return err
		}
		d.procs = append(d.procs, p)
	}
	return nil
}

// Stop deletes what the sidecars provisioned (the PVs of the driver and
// their claims) while they still run, then the CSIDriver and the
// StorageClass, and stops the processes, sidecars first.
func (d *Driver) Stop() {
	if d.stopResizer != nil {
		d.stopResizer()
		d.stopResizer = nil
	}
	if d.provisioned {
		d.deleteProvisioned()
		d.provisioned = false
	}
	for i := len(d.procs) - 1; i >= 0; i-- {
		d.procs[i].Stop()
	}
}

// deleteProvisioned deletes the claims of the driver's volumes and the
// volumes, and waits until the provisioner has deleted them: a PV it made
// carries its finalizer, which nothing removes once it is stopped.
func (d *Driver) deleteProvisioned() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ours := func() []v1.PersistentVolume {
		pvs, err := d.admin.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			d.logf("cleanup: list PVs: %v", err)
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
		d.logf("cleanup: PVs of %s left: %d", d.Name, len(left))
	}
	_ = d.admin.StorageV1().StorageClasses().Delete(ctx, d.StorageClass, metav1.DeleteOptions{})
	_ = d.admin.StorageV1().CSIDrivers().Delete(ctx, d.Name, metav1.DeleteOptions{})
}

// poll calls check until it succeeds or within has passed, and returns
// its last error then.
func poll(ctx context.Context, within time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	pause := 10 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// Process is a helper program run on the host, not in a pod, with its
// output kept.
type Process struct {
	Name string
	cmd  *exec.Cmd
	out  *testutil.LockedBuffer
	done chan struct{}
}

// StartProcess starts bin with args.
func StartProcess(name, bin string, args ...string) (*Process, error) {
	p := &Process{Name: name, cmd: exec.Command(bin, args...), out: &testutil.LockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Stop sends SIGTERM, and SIGKILL after 10 s.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Logs is what the process wrote so far.
func (p *Process) Logs() string { return p.out.String() }

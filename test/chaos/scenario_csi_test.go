package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

// chaosDriver is the name of the fake CSI driver of TestCSI.
const chaosDriver = "chaos.csi.actorlet.example.com"

// csiChaos is the node of TestCSI with the fake CSI driver
// (internal/plugins/fakeplugin) registered on it, as a driver's
// node-driver-registrar does: its sockets under the node's root. The
// driver runs in the test's process, so its crash is the end of its gRPC
// servers, every connection cut and both sockets gone, as when
// node-driver-registrar and the driver are killed together.
type csiChaos struct {
	*agent.APIPods
	plugin *fakeplugin.Plugin
	// backing holds the volumes' data, one directory per volume handle.
	backing   string
	reg, sock string
	stop      func()
	// t is TestCSI's: the driver serves across its subtests.
	t *testing.T
}

// TestCSI injects the faults of a CSI driver and of the agent beside one:
// a NodePublishVolume that hangs for one volume, the driver crashing and
// coming back, and the agent killed and restarted with CSI volumes mounted.
func TestCSI(t *testing.T) {
	n := NewNode(t, agent.WithConfig(fmt.Sprintf("nodeStatusUpdateFrequency: %s\n", statusPeriod)))
	n.Up(t, "csichaos")
	c := &csiChaos{APIPods: n, backing: t.TempDir(), t: t,
		reg: filepath.Join(n.RootDir, "plugins_registry", chaosDriver+"-reg.sock"), sock: filepath.Join(n.RootDir, "plugins", chaosDriver, "csi.sock")}
	if err := os.MkdirAll(filepath.Dir(c.sock), 0o750); err != nil {
		t.Fatal(err)
	}
	c.plugin = &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: chaosDriver, Versions: []string{"1.0.0"},
		NodeID: "chaos-" + n.Name, BackingDir: c.backing, StageUnstage: true}
	c.serve()
	if _, err := WaitFor(60*time.Second, c.registered); err != nil {
		t.Fatalf("the fake CSI driver did not register: %v", err)
	}
	no, yes := false, true
	n.MakeCSIDriver(t, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: chaosDriver}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: &no, PodInfoOnMount: &yes,
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}})

	t.Run("HungPublish", c.hungPublish)
	t.Run("DriverCrash", c.driverCrash)
	t.Run("AgentKill", c.agentKill)
}

// serve starts (or restarts) the driver's servers on its sockets.
func (c *csiChaos) serve() { c.stop = c.plugin.Serve(c.t, c.reg, c.sock) }

// registered returns nil when the CSINode lists the driver with its node
// ID.
func (c *csiChaos) registered() error {
	cn, err := c.Admin.StorageV1().CSINodes().Get(context.Background(), c.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, d := range cn.Spec.Drivers {
		if d.Name == chaosDriver && d.NodeID == c.plugin.NodeID {
			return nil
		}
	}
	return fmt.Errorf("the CSINode lists %d drivers, not %s", len(cn.Spec.Drivers), chaosDriver)
}

// claimPod is a pod that writes a line to its claim's volume (and, with
// inline, to an inline CSI volume of the driver) and then waits.
func (c *csiChaos) claimPod(name, claim string, inline bool) *v1.Pod {
	vols := []v1.Volume{agent.CSIClaimVolume("data", claim)}
	mounts := []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	script := "echo " + name + " > /data/" + name
	if inline {
		vols = append(vols, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: chaosDriver}}})
		mounts = append(mounts, v1.VolumeMount{Name: "scratch", MountPath: "/scratch"})
		script += " && echo " + name + " > /scratch/" + name
	}
	return c.NewPod(name, vols, c.Busybox("c", script+" && exec sleep 3600", mounts...))
}

func (c *csiChaos) create(pods ...*v1.Pod) error {
	for _, p := range pods {
		if _, err := c.Admin.CoreV1().Pods(c.NS).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// seesOwnData returns nil when the pod's container reads back what it
// wrote to its volumes.
func (c *csiChaos) seesOwnData(name string, inline bool) error {
	script := "cat /data/" + name
	want := name
	if inline {
		script += " /scratch/" + name
		want += "\n" + name
	}
	got, err := c.ShErr(name, "c", script)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("pod %s reads %q from its volumes, want %q", name, got, want)
	}
	return nil
}

// deleteAll deletes the pods and waits until the API no longer has them:
// the node lets a pod go once its volumes are torn down.
func (c *csiChaos) deleteAll(names []string, within time.Duration) (time.Duration, error) {
	if err := DeletePods(c.APIPods, names); err != nil {
		return 0, err
	}
	return WaitFor(within, func() error {
		left, err := StillPresent(c.APIPods, names)
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("still in the API: %v", left)
		}
		return err
	})
}

// waiting returns nil when the API shows the pod Pending with its
// container waiting in ContainerCreating, as a pod whose volumes are not
// set up is.
func (c *csiChaos) waiting(name string) error {
	p, err := c.Get(name)
	if err != nil {
		return err
	}
	if p.Status.Phase != v1.PodPending {
		return fmt.Errorf("pod %s is %s", name, p.Status.Phase)
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting == nil || s.State.Waiting.Reason != "ContainerCreating" {
			return fmt.Errorf("pod %s: container %s is %+v", name, s.Name, s.State)
		}
	}
	return nil
}

// leftovers are the CSI mount points under the node's root, each once per
// time it is mounted, and the volume directories left there: the pods'
// CSI volume directories and the driver's staging directories.
func (c *csiChaos) leftovers(t *testing.T) (mounts, dirs []string) {
	for _, m := range agent.HostMounts(t) {
		if strings.HasPrefix(m.Point, c.RootDir+"/") && (strings.Contains(m.Point, "kubernetes.io~csi") || strings.Contains(m.Point, "kubernetes.io/csi")) {
			mounts = append(mounts, m.Point)
		}
	}
	podDirs, _ := filepath.Glob(filepath.Join(c.RootDir, "pods", "*", "volumes", "kubernetes.io~csi", "*"))
	stageDirs, _ := filepath.Glob(filepath.Join(c.RootDir, "plugins", "kubernetes.io", "csi", chaosDriver, "*"))
	return mounts, append(podDirs, stageDirs...)
}

// nodeFigures records what the node watch and the lease watch saw: the
// node stays Ready and its heartbeats go on while the driver misbehaves.
func nodeFigures(s *Scenario, ns NodeStats, ls leaseStats) {
	s.AtMost("Ready changes of the node", float64(ns.ReadyChanges), 0, "")
	s.Check("node Ready at the end", ns.ReadyNow, fmt.Sprintf("Ready: %v", ns.ReadyNow))
	for _, ch := range ns.Changes {
		s.Note("node: %s", ch)
	}
	// The lease is renewed every quarter of its 40 s duration.
	s.AtMost("longest gap between lease renewals", ls.longestGap.Seconds(), 30, "s")
	s.Figure("lease renewals seen", float64(ls.renewals), "")
}

// hungPublish: NodePublishVolume of one volume hangs; only its pod waits,
// the node's other pods start, with and without the driver's volumes, and
// the node stays Ready; released, the pod starts.
func (c *csiChaos) hungPublish(t *testing.T) {
	s := Begin(t, "csi-hung-publish", "a CSI driver's NodePublishVolume hangs for one volume")
	hold := Pick(5*time.Second, 60*time.Second)
	hung := "hung-" + c.NS
	c.BoundCSIClaim(t, chaosDriver, "hung", hung)
	c.BoundCSIClaim(t, chaosDriver, "free", "free-"+c.NS)
	c.plugin.HangPublish(hung)
	// The watch's first sample is its baseline: the node Ready then.
	if _, err := WaitFor(60*time.Second, c.Ready); err != nil {
		t.Fatal(err)
	}
	nw := WatchNode(c.Admin, c.Name, 250*time.Millisecond)
	lw := watchLease(c.Admin, c.Name, 250*time.Millisecond)
	defer nw.Stop()
	defer lw.stop()

	others := []string{"free", "plain-0", "plain-1"}
	if err := c.create(c.claimPod("stuck", "hung", false), c.claimPod("free", "free", true),
		c.NewPod("plain-0", nil, c.Sleeper("c")), c.NewPod("plain-1", nil, c.Sleeper("c"))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var notRunning []string
	took, err := WaitFor(60*time.Second, func() error {
		var err error
		notRunning, err = NotRunning(c.APIPods, others)
		return err
	})
	s.AtMost("other pods (one with the driver's volumes) not running while the publish hangs", float64(len(notRunning)), 0, "")
	if err != nil {
		s.Note("%v", err)
	}
	s.Figure("other pods running after", took.Seconds(), "s")
	if _, err := WaitFor(30*time.Second, func() error {
		if fakeplugin.Count(c.plugin.Calls(), "NodePublishVolume", hung) == 0 {
			return errors.New("the hung volume's NodePublishVolume not called")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(hold)))
	err = c.waiting("stuck")
	s.Check("the hung volume's pod waits in ContainerCreating", err == nil, seen(err))
	_, err = NotRunning(c.APIPods, others)
	s.Check("the other pods still running", err == nil, seen(err))
	s.Figure("publish calls of the hung volume", float64(fakeplugin.Count(c.plugin.Calls(), "NodePublishVolume", hung)), "")

	c.plugin.ReleasePublish(hung)
	took, err = WaitFor(90*time.Second, func() error { _, err := NotRunning(c.APIPods, []string{"stuck"}); return err })
	s.AtMost("the hung volume's pod running after the hang ends", took.Seconds(), 60, "s")
	if err == nil {
		err = c.seesOwnData("stuck", false)
		s.Check("the pod of the hung volume sees its data", err == nil, seen(err))
	}
	nodeFigures(s, nw.Stop(), lw.stop())
	if _, err := c.deleteAll(append(others, "stuck"), 90*time.Second); err != nil {
		t.Fatal(err)
	}
}

// driverCrash: the driver dies, its sockets gone, and comes back after a
// while: its running pods keep their mounts, a pod created meanwhile
// waits and starts once the driver registered again, and the pods deleted
// after are unpublished and unstaged.
func (c *csiChaos) driverCrash(t *testing.T) {
	s := Begin(t, "csi-driver-crash", "a CSI driver crashes, its sockets gone, and comes back")
	rounds, down := Pick(1, 3), Pick(5*time.Second, 20*time.Second)
	if _, err := WaitFor(60*time.Second, c.Ready); err != nil {
		t.Fatal(err)
	}
	nw := WatchNode(c.Admin, c.Name, 250*time.Millisecond)
	lw := watchLease(c.Admin, c.Name, 250*time.Millisecond)
	defer nw.Stop()
	defer lw.stop()
	var lostData, lateStarted, lateWrong, unclean int
	var lateTook, longestLate time.Duration
	for i := range rounds {
		live, late := fmt.Sprintf("live-%d", i), fmt.Sprintf("late-%d", i)
		liveHandle, lateHandle := live+"-"+c.NS, late+"-"+c.NS
		c.BoundCSIClaim(t, chaosDriver, live, liveHandle)
		c.BoundCSIClaim(t, chaosDriver, late, lateHandle)
		if err := c.create(c.claimPod(live, live, true)); err != nil {
			t.Fatal(err)
		}
		if _, err := WaitFor(60*time.Second, func() error { _, err := NotRunning(c.APIPods, []string{live}); return err }); err != nil {
			t.Fatal(err)
		}
		if _, err := WaitFor(10*time.Second, func() error { return c.seesOwnData(live, true) }); err != nil {
			t.Fatal(err)
		}

		c.stop()
		crashed := time.Now()
		if err := c.create(c.claimPod(late, late, false)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(down)
		if err := c.seesOwnData(live, true); err != nil {
			lostData++
			s.Note("round %d, driver down: %v", i+1, err)
		}
		if err := c.waiting(late); err != nil {
			lateWrong++
			s.Note("round %d, driver down: %v", i+1, err)
		}
		if _, err := NotRunning(c.APIPods, []string{live}); err != nil {
			lostData++
			s.Note("round %d, driver down: %v", i+1, err)
		}

		c.serve()
		back := time.Now()
		if _, err := WaitFor(60*time.Second, c.registered); err != nil {
			s.Note("round %d: the driver not registered again: %v", i+1, err)
		}
		took, err := WaitFor(90*time.Second, func() error { _, err := NotRunning(c.APIPods, []string{late}); return err })
		if err != nil {
			s.Note("round %d: %v", i+1, err)
		} else {
			lateStarted++
			if err := c.seesOwnData(late, false); err != nil {
				lateWrong++
				s.Note("round %d: %v", i+1, err)
			}
		}
		lateTook += took
		longestLate = max(longestLate, took)
		s.Figure("driver down", back.Sub(crashed).Seconds(), "s")

		if _, err := c.deleteAll([]string{live, late}, 90*time.Second); err != nil {
			t.Fatal(err)
		}
		_, err = WaitFor(30*time.Second, func() error {
			calls := c.plugin.Calls()
			for _, h := range []string{liveHandle, lateHandle} {
				if fakeplugin.Count(calls, "NodeUnpublishVolume", h) == 0 || fakeplugin.Count(calls, "NodeUnstageVolume", h) == 0 {
					return fmt.Errorf("volume %s not unpublished and unstaged", h)
				}
			}
			if m, d := c.leftovers(t); len(m)+len(d) > 0 {
				return fmt.Errorf("left: mounts %v, directories %v", m, d)
			}
			return nil
		})
		if err != nil {
			unclean++
			s.Note("round %d, after the deletes: %v", i+1, err)
		}
	}
	s.Figure("rounds", float64(rounds), "")
	s.AtMost("running pods that lost their volumes' data while the driver was down", float64(lostData), 0, "")
	s.AtMost("pods created while down not waiting, or not seeing their data once started", float64(lateWrong), 0, "")
	s.AtLeast("pods created while down running once the driver is back", float64(lateStarted), float64(rounds), "")
	s.Figure("mean time to run a pod created while down, from the driver's return", lateTook.Seconds()/float64(rounds), "s")
	s.AtMost("longest time to run a pod created while down, from the driver's return", longestLate.Seconds(), 60, "s")
	s.AtMost("rounds with volumes not unpublished and unstaged, or mounts and directories left", float64(unclean), 0, "")
	nodeFigures(s, nw.Stop(), lw.stop())
}

// agentKill: the agent is killed (SIGKILL) and restarted with a pod's CSI
// volumes mounted: the container keeps running and reading its data, no
// mount is lost or made twice, and once the pod is deleted nothing of its
// volumes stays mounted or on disk.
func (c *csiChaos) agentKill(t *testing.T) {
	s := Begin(t, "csi-agent-kill", "the agent killed (SIGKILL) and restarted with CSI volumes mounted")
	rounds, settle := Pick(1, 5), Pick(5*time.Second, 20*time.Second)
	handle := "kept-" + c.NS
	c.BoundCSIClaim(t, chaosDriver, "kept", handle)
	if err := c.create(c.claimPod("kept", "kept", true)); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitFor(60*time.Second, func() error { _, err := NotRunning(c.APIPods, []string{"kept"}); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitFor(10*time.Second, func() error { return c.seesOwnData("kept", true) }); err != nil {
		t.Fatal(err)
	}
	mountsBefore, _ := c.leftovers(t)
	if len(mountsBefore) != 3 { // the staging path and two publish targets
		t.Fatalf("CSI mounts before the kill: %v, want the staging path and two targets", mountsBefore)
	}
	idsBefore, err := runningContainers(c.RT, OwnedBy(c.Owns))
	if err != nil {
		t.Fatal(err)
	}
	callsBefore := c.plugin.Calls()
	rw := WatchRuntime(c.RT, OwnedBy(c.Owns), 200*time.Millisecond)
	defer rw.Stop()
	lw := watchLease(c.Admin, c.Name, 250*time.Millisecond)
	defer lw.stop()

	var lostData, lostMounts, doubleMounts int
	for i := range rounds {
		c.Stop(syscall.SIGKILL)
		started := time.Now()
		c.Start()
		if _, err := WaitFor(60*time.Second, func() error {
			if r := lw.lastRenew(); !r.After(started) {
				return fmt.Errorf("lease last renewed %s, before the start", r.Format("15:04:05.000"))
			}
			return c.Ready()
		}); err != nil {
			s.Note("round %d: not caught up: %v", i+1, err)
		}
		// The restarted agent's volume reconciliation has time to run.
		time.Sleep(settle)
		if err := c.seesOwnData("kept", true); err != nil {
			lostData++
			s.Note("round %d: %v", i+1, err)
		}
		mounts, _ := c.leftovers(t)
		seen := map[string]int{}
		for _, m := range mounts {
			seen[m]++
		}
		for _, m := range mountsBefore {
			if seen[m] == 0 {
				lostMounts++
				s.Note("round %d: %s no longer mounted", i+1, m)
			}
		}
		for m, k := range seen {
			if k > 1 {
				doubleMounts++
				s.Note("round %d: %s mounted %d times", i+1, m, k)
			}
		}
		if len(seen) != len(mountsBefore) {
			s.Note("round %d: CSI mounts %v, before %v", i+1, mounts, mountsBefore)
		}
	}
	idsAfter, err := runningContainers(c.RT, OwnedBy(c.Owns))
	if err != nil {
		t.Fatal(err)
	}
	changed := diffIDs(idsBefore, idsAfter)
	calls := c.plugin.Calls()[len(callsBefore):]
	rs := rw.Stop()

	s.Figure("agent kills", float64(rounds), "")
	s.AtMost("containers restarted (runtime container IDs changed)", float64(len(changed)), 0, "")
	for _, ch := range changed {
		s.Note("changed: %s", ch)
	}
	s.AtMost("most running instances of one container at once", float64(rs.MaxInstancesPerContainer), 1, "")
	s.AtMost("checks where the container could not read its volumes' data", float64(lostData), 0, "")
	s.AtMost("CSI mounts lost", float64(lostMounts), 0, "")
	s.AtMost("CSI mount points mounted more than once", float64(doubleMounts), 0, "")
	s.Figure("NodeStageVolume calls after the kills", float64(fakeplugin.Count(calls, "NodeStageVolume", "")), "")
	s.Figure("NodePublishVolume calls after the kills", float64(fakeplugin.Count(calls, "NodePublishVolume", "")), "")
	s.AtMost("NodeUnpublishVolume and NodeUnstageVolume calls of the running pod", float64(fakeplugin.Count(calls, "NodeUnpublishVolume", "")+fakeplugin.Count(calls, "NodeUnstageVolume", "")), 0, "")

	took, err := c.deleteAll([]string{"kept"}, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.Figure("pod gone from the API after its delete", took.Seconds(), "s")
	var mounts, dirs []string
	took, _ = WaitFor(60*time.Second, func() error {
		if mounts, dirs = c.leftovers(t); len(mounts)+len(dirs) > 0 {
			return errors.New("left")
		}
		return nil
	})
	s.AtMost("CSI mounts left after the pod went", float64(len(mounts)), 0, "")
	s.AtMost("CSI volume and staging directories left after the pod went", float64(len(dirs)), 0, "")
	for _, m := range append(mounts, dirs...) {
		s.Note("left: %s", m)
	}
	s.Figure("CSI mounts and directories gone after the pod's delete", took.Seconds(), "s")
	calls = c.plugin.Calls()[len(callsBefore):]
	s.Check("the volumes unpublished and unstaged", fakeplugin.Count(calls, "NodeUnpublishVolume", "") >= 2 && fakeplugin.Count(calls, "NodeUnstageVolume", handle) >= 1,
		fmt.Sprintf("%d unpublish, %d unstage calls", fakeplugin.Count(calls, "NodeUnpublishVolume", ""), fakeplugin.Count(calls, "NodeUnstageVolume", handle)))
}

// seen is what a Check saw: "yes", or why not.
func seen(err error) string {
	if err == nil {
		return "yes"
	}
	return err.Error()
}

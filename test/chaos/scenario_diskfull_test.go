package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestDiskFull is scenario 6: the agent's root directory and the pods' log
// directory (podLogsDir) are small tmpfs mounts, filled up by the test
// while pods with data run. The agent must not crash, must report the
// failures as events and the DiskPressure condition, must recover once the
// space is freed, and no pod may lose its data.
//
// The root directory's file system is the eviction manager's nodefs. A
// soft threshold with a grace period longer than the scenario makes the
// condition show without evicting anyone (conditions come from thresholds
// met, grace periods aside; evictions wait for the grace period), and the
// hard thresholds are memory's only: the defaults would evict the pods for
// nodefs. A short pressure transition period lets the condition clear
// within the scenario.
func TestDiskFull(t *testing.T) {
	s := Begin(t, "disk-full", "root and pod log directories on full tmpfs mounts")
	keepers := Pick(1, 4)
	const rootSize, logSize = 64 << 20, 32 << 20
	// The eviction manager's monitoring interval and the node status
	// period (both 10 s, upstream's) bound the condition's changes.
	const monitoring, statusPeriod, transition = 10 * time.Second, 10 * time.Second, 5 * time.Second

	logs := t.TempDir()
	n := NewNode(t, agent.WithConfig(fmt.Sprintf(`podLogsDir: %s
evictionHard:
  memory.available: 100Mi
evictionSoft:
  nodefs.available: 20%%
evictionSoftGracePeriod:
  nodefs.available: 1h
evictionPressureTransitionPeriod: %s
`, logs, transition)))
	MountTmpfs(t, n.RootDir, rootSize)
	MountTmpfs(t, logs, logSize)
	// NewAPIPods unmounts what is under the root directory; the log
	// directory is elsewhere.
	n.AtCleanup(func() { Unmount(t, logs) })
	n.Up(t, "chaos-diskfull")

	// Pods with data: a file in an emptyDir, and a log line every 0.3 s.
	vol := []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	mount := v1.VolumeMount{Name: "data", MountPath: "/data"}
	keep := PodNames("keep", keepers)
	for _, name := range keep {
		n.Create(t, n.NewPod(name, vol, n.Busybox("c",
			`echo "data of $HOSTNAME" > /data/file; i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.3; done`, mount)))
	}
	for _, name := range keep {
		n.Running(t, name, 60*time.Second)
		n.EventuallySees(t, name, "c", "cat /data/file", "data of "+name, 30*time.Second)
	}
	before := map[string]string{}
	for _, name := range keep {
		agent.Eventually(t, "log lines of "+name, 30*time.Second, func() error {
			l, err := PodLogs(n, name, "c")
			if err == nil && !strings.Contains(l, "line 3\n") {
				err = fmt.Errorf("log so far: %q", l)
			}
			before[name] = l
			return err
		})
	}
	nw := WatchNode(n.Admin, n.Name, 500*time.Millisecond)
	defer nw.Stop()

	// Fill both.
	fillLogs, fillRoot := filepath.Join(logs, "chaos-fill"), filepath.Join(n.RootDir, "chaos-fill")
	for _, f := range []string{fillLogs, fillRoot} {
		written, err := Fill(f)
		if err != nil {
			t.Fatalf("fill %s: %v", f, err)
		}
		s.Note("filled %s with %d MiB", filepath.Dir(f), written>>20)
	}
	filled := time.Now()
	t.Cleanup(func() { os.Remove(fillLogs); os.Remove(fillRoot) })

	// A pod that comes while the disks are full.
	n.Create(t, n.NewPod("during", vol, n.Sleeper("c", mount)))

	took, err := WaitFor(monitoring+statusPeriod+30*time.Second, func() error {
		if st, err := NodeCondition(n, v1.NodeDiskPressure); err != nil || st != v1.ConditionTrue {
			return fmt.Errorf("DiskPressure %s (%v)", st, err)
		}
		return nil
	})
	if err != nil {
		s.Note("DiskPressure not reported: %v", err)
	}
	s.Check("DiskPressure reported while the root directory is full", err == nil, took.Round(100*time.Millisecond).String())
	if err == nil {
		s.AtMost("disk full → DiskPressure", took.Seconds(), (monitoring + statusPeriod + 10*time.Second).Seconds(), "s")
	}

	// A pod that comes under pressure is refused by admission, as
	// upstream's (a terminal phase, a Warning event).
	if err == nil {
		n.Create(t, n.NewPod("pressured", vol, n.Sleeper("c", mount)))
	}

	// A static pod is critical: admitted under pressure, it meets the
	// full disk itself.
	n.WriteManifest("static-full.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: static-full
  namespace: %s
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: c
    image: %s
    command: [sh, -c, 'echo static > /data/file; exec sleep 3600']
    volumeMounts:
    - name: data
      mountPath: /data
`, n.NS, n.Env.BusyboxImage))
	staticName := "static-full-" + n.Name

	// The failures reported as Warning events, with their cause.
	var noSpace []SeenEvent
	if _, err := WaitFor(45*time.Second, func() error {
		evs, err := WarningEvents(n)
		if err != nil {
			return err
		}
		noSpace = noSpace[:0]
		for _, e := range evs {
			if strings.Contains(e.Message, "no space left on device") {
				noSpace = append(noSpace, e)
			}
		}
		if len(noSpace) == 0 {
			return fmt.Errorf("no Warning event says %q", "no space left on device")
		}
		return nil
	}); err != nil {
		s.Note("waiting for the warning events: %v", err)
	}
	if evs, err := WarningEvents(n); err == nil {
		noSpace = noSpace[:0]
		for _, e := range uniqueEvents(evs) {
			s.Note("while full, warning: %s", e)
			if strings.Contains(e.Message, "no space left on device") {
				noSpace = append(noSpace, e)
			}
		}
	}
	s.AtLeast("Warning events saying no space left on device", float64(len(noSpace)), 1, "")

	// The agent's own state writes failed (the allocations' checkpoint
	// at each admission): cleanly, leaving no partial file to take the
	// space the next write needs.
	partial, _ := filepath.Glob(filepath.Join(n.RootDir, "*.tmp"))
	s.Check("no partial state file left by failed writes", len(partial) == 0, fmt.Sprintf("%q", partial))

	alive := n.Proc.Alive() && !strings.Contains(n.Logs(), "panic")
	s.Check("agent alive, no panic, while full", alive, fmt.Sprintf("alive %v", n.Proc.Alive()))
	if _, err := NotRunning(n, keep); err != nil {
		s.Note("while full: %v", err)
	}

	// Free the space.
	for _, f := range []string{fillLogs, fillRoot} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	freed := time.Now()
	s.Figure("full for", freed.Sub(filled).Seconds(), "s")
	took, err = WaitFor(monitoring+transition+statusPeriod+30*time.Second, func() error {
		if st, err := NodeCondition(n, v1.NodeDiskPressure); err != nil || st != v1.ConditionFalse {
			return fmt.Errorf("DiskPressure %s (%v)", st, err)
		}
		return nil
	})
	if err != nil {
		s.Note("DiskPressure not cleared: %v", err)
	}
	s.AtMost("space freed → DiskPressure cleared", took.Seconds(), (monitoring + transition + statusPeriod + 10*time.Second).Seconds(), "s")

	// Recovery: the static pod runs, a new pod runs, the pod that came
	// while full either runs or was refused for the pressure (terminal).
	n.Create(t, n.NewPod("after", vol, n.Sleeper("c", mount)))
	var during *v1.Pod
	took, err = WaitFor(90*time.Second, func() error {
		if _, err := NotRunning(n, append([]string{"after"}, keep...)); err != nil {
			return err
		}
		p, err := n.Get(staticName)
		if err != nil {
			return fmt.Errorf("mirror pod of static-full: %w", err)
		}
		if err := agent.PodRunning(p); err != nil {
			return err
		}
		if during, err = n.Get("during"); err != nil {
			return err
		}
		if during.Status.Phase != v1.PodFailed && agent.PodRunning(during) != nil {
			return fmt.Errorf("pod during: phase %s", during.Status.Phase)
		}
		return nil
	})
	if err != nil {
		s.Note("not recovered: %v", err)
	}
	converged := time.Now()
	s.AtMost("space freed → new pods and the static pod running", took.Seconds(), 60, "s")
	if during != nil {
		s.Note("pod created while full: phase %s, reason %q, message %q", during.Status.Phase, during.Status.Reason, during.Status.Message)
	}

	// No data lost: the files of the emptyDirs, the log lines from before,
	// and new log lines once there is space again.
	lost := 0
	for _, name := range keep {
		got, err := n.ShErr(name, "c", "cat /data/file")
		if err != nil || got != "data of "+name {
			lost++
			s.Note("%s: /data/file %q (%v)", name, got, err)
		}
		var after string
		_, err = WaitFor(20*time.Second, func() error {
			l, err := PodLogs(n, name, "c")
			after = l
			if err != nil {
				return err
			}
			if !strings.HasPrefix(l, before[name]) {
				return fmt.Errorf("the log from before the fill is not there")
			}
			if len(l) <= len(before[name]) {
				return fmt.Errorf("no new log lines")
			}
			return nil
		})
		if err != nil {
			lost++
			s.Note("%s: log: %v (%d bytes now, %d before)", name, err, len(after), len(before[name]))
		} else {
			s.Note("%s: log lines %d before the fill, %d now (those written while full are lost)", name,
				strings.Count(before[name], "\n"), strings.Count(after, "\n"))
		}
	}
	s.AtMost("pods whose data or earlier logs were lost", float64(lost), 0, "")
	if restarts, err := RestartCounts(n.Admin, n.NS); err == nil {
		s.AtMost("container restarts", float64(restarts), 0, "")
	}

	// The agent's own state: the allocations' checkpoint names the pods
	// admitted, those since the space came back too.
	var uids []string
	for _, name := range append([]string{"after"}, keep...) {
		if p, err := n.Get(name); err == nil {
			uids = append(uids, string(p.UID))
		}
	}
	var missing []string
	_, err = WaitFor(20*time.Second, func() error {
		var err error
		if missing, err = missingUIDs(stateFile(n.RootDir), uids); err == nil && len(missing) > 0 {
			err = fmt.Errorf("%d pods missing", len(missing))
		}
		return err
	})
	s.Check("allocated_pods_state written again with every pod", err == nil, fmt.Sprintf("%d of %d pods missing (%v)", len(missing), len(uids), err))

	// Events stop once recovered.
	time.Sleep(time.Until(converged.Add(10 * time.Second)))
	late := 0
	if evs, err := WarningEvents(n); err == nil {
		for _, e := range evs {
			if e.Last.After(converged.Add(2 * time.Second)) {
				late++
				s.Note("warning after recovery: %s (%s)", e, e.Last.Format("15:04:05"))
			}
		}
	}
	s.AtMost("Warning events after recovery", float64(late), 0, "")

	ns := nw.Stop()
	for _, c := range ns.Changes {
		s.Note("node condition: %s %s", c, c.Message)
	}
	s.AtMost("Ready changes", float64(ns.ReadyChanges), 0, "")
	if p, err := n.Get("pressured"); err == nil {
		s.Note("pod created under DiskPressure: phase %s, reason %q, message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	// What the agent itself logged of the full disks.
	var agentSaw []string
	for _, line := range strings.Split(n.Logs(), "\n") {
		if strings.Contains(line, "no space left on device") && len(agentSaw) < 6 {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			agentSaw = append(agentSaw, line)
		}
	}
	for _, line := range agentSaw {
		s.Note("agent log: %s", line)
	}
	alive = n.Proc.Alive() && !strings.Contains(n.Logs(), "panic")
	s.Check("agent alive, no panic, throughout", alive, fmt.Sprintf("alive %v", n.Proc.Alive()))
	_ = freed
}

// uniqueEvents keeps one event per object, reason and message.
func uniqueEvents(evs []SeenEvent) []SeenEvent {
	seen := map[string]bool{}
	var out []SeenEvent
	for _, e := range evs {
		if k := e.String(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

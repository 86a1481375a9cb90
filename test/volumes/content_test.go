package volumes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/test/agent"
)

const pluginSecret = "kubernetes.io~secret"

// TestContentVolumes: configMap, secret and downwardAPI volumes, whose
// files come from API objects read as the node (or from the pod), with
// their live updates, and the Node authorizer's refusal of what another
// node's pod references.
func TestContentVolumes(t *testing.T) {
	n := newVolNode(t)

	t.Run("configMap items, paths, modes, optional", func(t *testing.T) {
		cm := n.ConfigMap(t, "app", map[string]string{"a": "alpha", "b": "beta", "c": "gamma"})
		yes := true
		p := n.NewPod("configmap", []v1.Volume{
			{Name: "picked", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: cm},
				Items:                []v1.KeyToPath{{Key: "a", Path: "x/y/a.txt"}, {Key: "b", Path: "b.txt", Mode: mode(0o600)}},
				DefaultMode:          mode(0o440),
			}}},
			{Name: "whole", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: cm}}}},
			{Name: "absent", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "no-such-configmap"}, Optional: &yes}}},
		}, n.Sleeper("c", mnt("picked", "/picked"), mnt("whole", "/whole"), mnt("absent", "/absent")))
		n.Run(t, p)
		// Only the items, at their paths, with their modes.
		n.Expect(t, "configmap", "c", "ls /picked | tr '\\n' ' '", "b.txt x ")
		n.Expect(t, "configmap", "c", "cat /picked/x/y/a.txt /picked/b.txt", "alphabeta")
		n.Expect(t, "configmap", "c", "stat -L -c %a /picked/x/y/a.txt /picked/b.txt | tr '\\n' ' '", "440 600 ")
		// Every key, defaultMode 0644; the files are upstream's atomic
		// writer's symlinks into ..data.
		n.Expect(t, "configmap", "c", "ls /whole | tr '\\n' ' '", "a b c ")
		n.Expect(t, "configmap", "c", "stat -L -c %a /whole/a", "644")
		n.Expect(t, "configmap", "c", "readlink /whole/a", "..data/a")
		// Read-only in the container whatever the volume mount says.
		if _, opts := n.containerMount(t, "configmap", "c", "/whole"); !slices.Contains(opts, "ro") {
			t.Errorf("/whole mounted %v, want ro", opts)
		}
		if out, err := n.ShErr("configmap", "c", "touch /whole/new"); err == nil {
			t.Errorf("touch in a configMap volume succeeded (%q)", out)
		}
		// Optional and missing: an empty directory.
		n.Expect(t, "configmap", "c", "test -d /absent && ls /absent | wc -l", "0")
	})

	t.Run("configMap missing, then created", func(t *testing.T) {
		p := n.NewPod("configmap-late", []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "late"}}}}}, n.Sleeper("c", mnt("cfg", "/cfg")))
		n.Create(t, p)
		// Upstream: MountVolume.SetUp failed for volume "cfg" : configmap
		// "late" not found.
		n.Event(t, "configmap-late", "FailedMount", `"cfg"`, `"late" not found`)
		n.stuckCreating(t, "configmap-late")
		n.ConfigMap(t, "late", map[string]string{"k": "arrived"})
		n.Running(t, "configmap-late", 2*time.Minute)
		n.Expect(t, "configmap-late", "c", "cat /cfg/k", "arrived")
	})

	t.Run("secret on tmpfs with modes", func(t *testing.T) {
		s := n.Secret(t, "creds", map[string]string{"user": "admin", "pass": "s3cr3t"})
		p := n.NewPod("secret", []v1.Volume{{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
			SecretName:  s,
			Items:       []v1.KeyToPath{{Key: "user", Path: "user"}, {Key: "pass", Path: "deep/pass", Mode: mode(0o440)}},
			DefaultMode: mode(0o400),
		}}}}, n.Sleeper("c", mnt("sec", "/sec")))
		created := n.Run(t, p)
		n.Expect(t, "secret", "c", "cat /sec/user; echo; cat /sec/deep/pass", "admin\ns3cr3t")
		n.Expect(t, "secret", "c", "stat -L -c %a /sec/user /sec/deep/pass | tr '\\n' ' '", "400 440 ")
		// Never on disk: a tmpfs on the host and in the container,
		// read-only there.
		fstype, opts := n.containerMount(t, "secret", "c", "/sec")
		if fstype != "tmpfs" || !slices.Contains(opts, "ro") {
			t.Errorf("/sec in the container: %s %v, want tmpfs ro", fstype, opts)
		}
		dir := n.volumeDir(created.UID, pluginSecret, "sec")
		if ms := agent.MountsAt(t, dir); len(ms) != 1 || ms[0].FSType != "tmpfs" {
			t.Errorf("host mounts at %s: %+v, want one tmpfs", dir, ms)
		}
	})

	t.Run("configMap and secret updated live", func(t *testing.T) {
		cm := n.ConfigMap(t, "live-config", map[string]string{"v": "one"})
		s := n.Secret(t, "live-secret", map[string]string{"v": "one"})
		p := n.NewPod("live", []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: s}}},
		}, n.Sleeper("c", mnt("cfg", "/cfg"), mnt("sec", "/sec")))
		n.Run(t, p)
		n.Expect(t, "live", "c", "cat /cfg/v /sec/v", "oneone")
		ctx := context.Background()
		if _, err := n.Admin.CoreV1().ConfigMaps(n.NS).Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm},
			Data: map[string]string{"v": "two"}}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Admin.CoreV1().Secrets(n.NS).Update(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s},
			StringData: map[string]string{"v": "two"}}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Upstream rewrites them at the pod's next sync: within about one
		// syncFrequency (with its jitter, up to 1.5 of it) and the watch's
		// delay. The bound leaves room for a loaded machine.
		within := 3*syncFrequency + 15*time.Second
		took := n.EventuallySees(t, "live", "c", "cat /cfg/v", "two", within)
		t.Logf("the configMap's update seen in the pod after %v (syncFrequency %v)", took.Round(100*time.Millisecond), syncFrequency)
		took = n.EventuallySees(t, "live", "c", "cat /sec/v", "two", within)
		t.Logf("the secret's update seen in the pod %v later", took.Round(100*time.Millisecond))
	})

	t.Run("projected configMap, secret and downwardAPI", func(t *testing.T) {
		cm := n.ConfigMap(t, "projected-config", map[string]string{"a": "alpha", "unused": "x"})
		s := n.Secret(t, "projected-secret", map[string]string{"p": "pw"})
		p := n.NewPod("projected", []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
			DefaultMode: mode(0o440),
			Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: cm}, Items: []v1.KeyToPath{{Key: "a", Path: "cfg/a"}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: s}, Items: []v1.KeyToPath{{Key: "p", Path: "sec/p", Mode: mode(0o400)}}}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "pod/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			},
		}}}}, n.Sleeper("c", mnt("all", "/all")))
		n.Run(t, p)
		// One directory of every source's items, on tmpfs (a projection
		// may hold a secret), read-only.
		n.Expect(t, "projected", "c", "ls /all | tr '\\n' ' '", "cfg pod sec ")
		n.Expect(t, "projected", "c", "cat /all/cfg/a /all/sec/p /all/pod/name", "alphapwprojected")
		n.Expect(t, "projected", "c", "stat -L -c %a /all/cfg/a /all/sec/p /all/pod/name | tr '\\n' ' '", "440 400 440 ")
		if fstype, opts := n.containerMount(t, "projected", "c", "/all"); fstype != "tmpfs" || !slices.Contains(opts, "ro") {
			t.Errorf("/all in the container: %s %v, want tmpfs ro", fstype, opts)
		}
	})

	t.Run("downwardAPI", func(t *testing.T) {
		node, err := n.NodeObject()
		if err != nil {
			t.Fatal(err)
		}
		field := func(path, fp string) v1.DownwardAPIVolumeFile {
			return v1.DownwardAPIVolumeFile{Path: path, FieldRef: &v1.ObjectFieldSelector{FieldPath: fp}}
		}
		res := func(path, r, divisor string) v1.DownwardAPIVolumeFile {
			return v1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &v1.ResourceFieldSelector{
				ContainerName: "c", Resource: r, Divisor: resource.MustParse(divisor)}}
		}
		c := n.Sleeper("c", mnt("info", "/info"))
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		p := n.NewPod("downward", []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
			Items: []v1.DownwardAPIVolumeFile{
				field("name", "metadata.name"), field("namespace", "metadata.namespace"), field("uid", "metadata.uid"),
				field("labels", "metadata.labels"), field("annotations", "metadata.annotations"),
				res("mem", "limits.memory", "1Mi"),
				// No CPU limit: upstream writes node allocatable.
				res("cpu", "limits.cpu", "1m"),
			}}}}}, c)
		p.Labels = map[string]string{"app": "volumes", "tier": "one"}
		p.Annotations = map[string]string{"note": "hello"}
		created := n.Run(t, p)
		n.Expect(t, "downward", "c", "cat /info/name", "downward")
		n.Expect(t, "downward", "c", "cat /info/namespace", n.NS)
		n.Expect(t, "downward", "c", "cat /info/uid", string(created.UID))
		// Upstream's format: key="value" lines, sorted.
		n.Expect(t, "downward", "c", "cat /info/labels", "app=\"volumes\"\ntier=\"one\"")
		if got := n.Sh(t, "downward", "c", "cat /info/annotations"); !strings.Contains(got, `note="hello"`) {
			t.Errorf("annotations file %q, want note=\"hello\" among them", got)
		}
		n.Expect(t, "downward", "c", "cat /info/mem", "64")
		n.Expect(t, "downward", "c", "cat /info/cpu", fmt.Sprint(node.Status.Allocatable.Cpu().MilliValue()))
		// A label added to the running pod reaches the file.
		if _, err := n.Admin.CoreV1().Pods(n.NS).Patch(context.Background(), "downward", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"phase":"updated"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		took := n.EventuallySees(t, "downward", "c", "cat /info/labels", "app=\"volumes\"\nphase=\"updated\"\ntier=\"one\"", 3*syncFrequency+15*time.Second)
		t.Logf("the label seen in the pod after %v", took.Round(100*time.Millisecond))
	})

	t.Run("node refused another node's pod's secret", func(t *testing.T) {
		// The Node authorizer lets a node read only what the pods bound to
		// it reference: a secret that only a pod of another node uses is
		// Forbidden to this node, with the node's own credentials (those
		// actorlet runs with).
		ctx := context.Background()
		s := n.Secret(t, "elsewhere", map[string]string{"k": "v"})
		grace := int64(0)
		other := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: n.NS},
			Spec: v1.PodSpec{NodeName: "actorlet-other-node", TerminationGracePeriodSeconds: &grace,
				AutomountServiceAccountToken: new(false),
				Volumes:                      []v1.Volume{{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: s}}}},
				Containers:                   []v1.Container{n.Sleeper("c", mnt("sec", "/sec"))}},
		}
		n.Create(t, other)
		nodeClient := n.Env.NodeClient(t)
		forbidden := func() error {
			_, err := nodeClient.CoreV1().Secrets(n.NS).Get(ctx, s, metav1.GetOptions{})
			if !apierrors.IsForbidden(err) {
				return fmt.Errorf("node %s reading secret %s of a pod on another node: %v, want Forbidden", n.Name, s, err)
			}
			return nil
		}
		agent.Consistently(t, "the secret Forbidden to the node", 2*time.Second, 500*time.Millisecond, forbidden)
		// Once a pod bound to this node references it, the node reads it
		// and the pod gets it.
		n.Run(t, n.NewPod("here", []v1.Volume{{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: s}}}},
			n.Sleeper("c", mnt("sec", "/sec"))))
		n.Expect(t, "here", "c", "cat /sec/k", "v")
	})
}

func mode(m int32) *int32 { return &m }

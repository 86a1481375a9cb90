// Package admission runs actorlet as the environment's node against the
// real kube-apiserver and containerd with pods the node must refuse (issue
// #21): each of upstream's admission predicates, the pod Failed with
// upstream's reason and message and a Warning event, and the refusal
// surviving a restart of actorlet. Upstream kubelet v1.37.2 is the
// reference:
//
//	ADMISSION_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/admission/
package admission

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// ADMISSION_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "ADMISSION_KUBELET") }

// upNode starts the node under test with the configuration cfg (and the
// upstream kubelet's settings, when it is the kubelet), its pods in a
// namespace named from prefix.
func upNode(t *testing.T, prefix, cfg string) *agent.APIPods {
	t.Helper()
	if kubelet.Upstream {
		cfg += agent.UpstreamKubeletConfig
	}
	n := agent.NewAPIPods(t, kubelet.Binary, agent.WithConfig(cfg))
	n.Up(t, prefix)
	return n
}

// testTaint is the NoExecute taint the test puts on the shared node, and
// removes at its end.
const testTaint = "actorlet.test/admission"

// rejection is a pod the node must refuse, with upstream's reason and the
// message its status carries.
type rejection struct {
	pod             *v1.Pod
	reason, message string
}

// TestAdmission creates pods bound to the node that each predicate
// refuses, checks their Failed status and Warning event, restarts actorlet
// and checks that they stay Failed and never get a sandbox; pods the node
// can honour (allowed sysctls, a label just added to the node, a tolerated
// taint) run.
func TestAdmission(t *testing.T) {
	n := upNode(t, "admission", "allowedUnsafeSysctls:\n- kernel.msg*\n")
	ctx := context.Background()

	// Every pod tolerates the test's taint but the one that must not:
	// the taint manager evicts the pods that do not tolerate it.
	tolerate := func(p *v1.Pod) *v1.Pod {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: testTaint, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
		return p
	}
	pod := func(name string, mutate func(*v1.Pod)) *v1.Pod {
		p := tolerate(n.NewPod(name, nil, n.Sleeper("c")))
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	requests := func(kv ...string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			r := v1.ResourceList{}
			for i := 0; i+1 < len(kv); i += 2 {
				r[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
			}
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: r, Limits: r}
		}
	}
	sysctls := func(names ...string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{}
			for _, s := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: s, Value: "1"})
			}
		}
	}
	otherOS := "windows"
	if runtime.GOOS == "windows" {
		otherOS = "linux"
	}
	const affinity = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"

	// The node takes the test's NoExecute taint, removed at the end.
	updateNode(t, n, func(node *v1.Node) {
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: testTaint, Value: "x", Effect: v1.TaintEffectNoExecute})
	})
	t.Cleanup(func() {
		updateNode(t, n, func(node *v1.Node) {
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == testTaint })
			delete(node.Labels, testTaint)
		})
	})

	// The pod taking the host port runs first.
	hostPort := func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: 31881, Protocol: v1.ProtocolTCP}}
	}
	n.Run(t, pod("port-holder", hostPort))

	rejections := []rejection{
		{pod("selector", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"actorlet.test/absent": "yes"} }), "NodeAffinity", affinity},
		{pod("affinity", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
					{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpNotIn, Values: []string{n.Name}}}}}}}}
		}), "NodeAffinity", affinity},
		{pod("arch", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "not-" + runtime.GOARCH} }), "NodeAffinity", affinity},
		{n.NewPod("untolerated", nil, n.Sleeper("c")), "TaintToleration",
			"Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{pod("port-taker", hostPort), "NodePorts",
			"Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{pod("too-much-cpu", requests("cpu", "1000")), "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000000"},
		{pod("too-much-memory", requests("memory", "1000Ti")), "OutOfmemory", "Node didn't have enough resource: memory, requested: 1099511627776000"},
		{pod("too-much-storage", requests("ephemeral-storage", "1000Ti")), "OutOfephemeral-storage",
			"Node didn't have enough resource: ephemeral-storage, requested: 1099511627776000"},
		{pod("hugepages", requests("hugepages-2Mi", "1Gi", "memory", "64Mi", "cpu", "100m")), "OutOfhugepages-2Mi",
			"Node didn't have enough resource: hugepages-2Mi, requested: 1073741824"},
		{pod("os-label", func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: otherOS} }), "PodOSSelectorNodeLabelDoesNotMatch",
			"Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{pod("os-field", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.OSName(otherOS)} }), "PodOSNotSupported",
			"Failed to admit pod as the OS field doesn't match node OS"},
		{pod("unsafe-sysctl", sysctls("kernel.sem")), "SysctlForbidden", `forbidden sysctl: "kernel.sem" not allowlisted`},
		// AppArmor is not enabled on the test machine's kernel.
		{pod("apparmor", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}), "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{pod("apparmor-annotation", func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/k8s-apparmor-example"}
		}), "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		// A sysctl of a namespace shared with the host (hostNetwork,
		// hostIPC) is refused by the API's validation already.
	}
	// containerd 1.x does not report that it honours
	// supplementalGroupsPolicy: Strict (the Node's status.features):
	// upstream refuses such pods there.
	ver, err := n.RT.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(ver.RuntimeVersion, "1.") {
		rejections = append(rejections, rejection{pod("strict-groups", func(p *v1.Pod) {
			strict := v1.SupplementalGroupsPolicyStrict
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
		}), "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"})
	}
	for _, r := range rejections {
		n.Create(t, r.pod)
	}
	uids := map[string]string{}
	for _, r := range rejections {
		t.Run("rejected/"+r.pod.Name, func(t *testing.T) {
			p := failedWith(t, n, r)
			uids[r.pod.Name] = string(p.UID)
			n.Event(t, r.pod.Name, r.reason, r.message)
		})
	}

	t.Run("allowed sysctls", func(t *testing.T) {
		p := pod("sysctls", sysctls("kernel.msgmax", "net.ipv4.tcp_syncookies", "kernel.shm_rmid_forced"))
		p.Spec.SecurityContext.Sysctls[0].Value = "12345"
		n.Run(t, p)
		n.Expect(t, "sysctls", "c", "cat /proc/sys/kernel/msgmax /proc/sys/kernel/shm_rmid_forced", "12345\n1")
	})
	t.Run("a label just added to the node", func(t *testing.T) {
		// Upstream reads the Node again before refusing a pod for its
		// node affinity alone: the Node it holds may predate the label.
		updateNode(t, n, func(node *v1.Node) { node.Labels[testTaint] = "labelled" })
		n.Run(t, pod("labelled", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{testTaint: "labelled"} }))
	})

	if !strings.HasPrefix(ver.RuntimeVersion, "1.") {
		t.Run("strict groups", func(t *testing.T) {
			strictGroups(t, n, tolerate)
		})
	}

	// The refusals survive a restart: the pods stay Failed, with their
	// reasons, and none of them ever gets a sandbox.
	n.Stop(syscall.SIGKILL)
	n.Start()
	agent.Eventually(t, "node Ready after the restart", 30*time.Second, n.Ready)
	// A pod started after the restart proves the pod-manager is at work.
	n.Run(t, pod("after-restart", nil))
	agent.Consistently(t, "rejected pods stay Failed, with no sandbox", 10*time.Second, 2*time.Second, func() error {
		for _, r := range rejections {
			p, err := n.Get(r.pod.Name)
			if err != nil {
				return err
			}
			if p.Status.Phase != v1.PodFailed || p.Status.Reason != r.reason {
				return fmt.Errorf("pod %s after the restart: phase %s, reason %q", r.pod.Name, p.Status.Phase, r.reason)
			}
			if sbs, cs := agent.RuntimeObjects(t, n.RT, uids[r.pod.Name]); sbs+cs > 0 {
				return fmt.Errorf("pod %s: %d sandboxes and %d containers in the runtime", r.pod.Name, sbs, cs)
			}
		}
		return nil
	})
	if _, err := n.Admin.CoreV1().Pods(n.NS).Get(ctx, "port-holder", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

// strictGroups runs, on a runtime that honours it, a pod with
// supplementalGroupsPolicy: Strict beside one with Merge, as uid 1000 of
// the agnhost image, whose /etc/group puts that user in group 50000: with
// Merge the container's groups include 50000, with Strict only the pod's
// own, as id -G shows in the container and containerStatuses[].user says.
func strictGroups(t *testing.T, n *agent.APIPods, tolerate func(*v1.Pod) *v1.Pod) {
	const agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	for _, tc := range []struct {
		policy v1.SupplementalGroupsPolicy
		groups string
	}{
		{v1.SupplementalGroupsPolicyMerge, "1000 50000 60000"},
		{v1.SupplementalGroupsPolicyStrict, "1000 60000"},
	} {
		name := "groups-" + strings.ToLower(string(tc.policy))
		policy := tc.policy
		p := tolerate(n.NewPod(name, nil, v1.Container{Name: "c", Image: agnhost,
			ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"pause"}}))
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000),
			SupplementalGroups: []int64{60000}, SupplementalGroupsPolicy: &policy}
		n.Run(t, p)
		n.Expect(t, name, "c", "id -G", tc.groups)
		st, err := n.ContainerState(name, "c")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if u := st.User; u != nil && u.Linux != nil {
			for _, g := range u.Linux.SupplementalGroups {
				got = append(got, strconv.FormatInt(g, 10))
			}
		}
		if want := strings.Fields(tc.groups); !slices.Equal(got, want) {
			t.Errorf("%s: containerStatuses[].user.linux.supplementalGroups %v, want %v", name, got, want)
		}
	}
}

// TestStaticPodRejected writes a static pod with a forbidden sysctl: as
// upstream, it is refused (a Warning event, no sandbox), and refused again
// after a restart (a manifest has no phase to keep).
func TestStaticPodRejected(t *testing.T) {
	n := upNode(t, "admission-static", "")
	n.WriteManifest("unsafe.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: unsafe
  namespace: default
spec:
  securityContext:
    sysctls:
    - name: kernel.sem
      value: "250 32000 32 128"
  containers:
  - name: c
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, n.Env.BusyboxImage))
	name := "unsafe-" + n.Name
	// refusals counts the SysctlForbidden events of the pod (upstream's
	// rejectPod records one each time it refuses it).
	refusals := func() (int32, error) {
		evs, err := n.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return 0, err
		}
		var count int32
		for _, ev := range evs.Items {
			if ev.Type == v1.EventTypeWarning && ev.Reason == "SysctlForbidden" && ev.Message == `forbidden sysctl: "kernel.sem" not allowlisted` {
				count += max(ev.Count, 1)
			}
		}
		return count, nil
	}
	refusedMore := func(than int32) func() error {
		return func() error {
			c, err := refusals()
			if err != nil {
				return err
			}
			if c <= than {
				return fmt.Errorf("%d SysctlForbidden events", c)
			}
			if sbs := agent.Sandboxes(t, n.RT, map[string]string{"io.kubernetes.pod.name": name}); len(sbs) > 0 {
				return fmt.Errorf("%d sandboxes in the runtime", len(sbs))
			}
			return nil
		}
	}
	agent.Eventually(t, "the static pod refused", 30*time.Second, refusedMore(0))
	if !kubelet.Upstream {
		// actorlet writes the refusal to the mirror pod; upstream makes
		// no mirror pod for a static pod it refused.
		agent.Eventually(t, "the mirror pod Failed", 30*time.Second, func() error {
			p, err := n.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			want := `Pod was rejected: forbidden sysctl: "kernel.sem" not allowlisted`
			if p.Status.Phase != v1.PodFailed || p.Status.Reason != "SysctlForbidden" || p.Status.Message != want {
				return fmt.Errorf("phase %s, reason %q, message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
			}
			return nil
		})
	}
	before, err := refusals()
	if err != nil {
		t.Fatal(err)
	}
	n.Stop(syscall.SIGKILL)
	n.Start()
	agent.Eventually(t, "the static pod refused again after a restart", 30*time.Second, refusedMore(before))
	agent.Consistently(t, "the static pod never runs", 6*time.Second, 2*time.Second, refusedMore(before))
}

// failedWith waits until the API shows the pod Failed with the rejection's
// reason and message, and never started.
func failedWith(t *testing.T, n *agent.APIPods, r rejection) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	agent.Eventually(t, "pod "+r.pod.Name+" rejected with "+r.reason, 60*time.Second, func() error {
		p, err := n.Get(r.pod.Name)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != r.reason ||
			!strings.HasPrefix(p.Status.Message, "Pod was rejected: "+r.message) {
			return fmt.Errorf("phase %s, reason %q, message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
			return fmt.Errorf("a container runs")
		}
		pod = p
		return nil
	})
	return pod
}

// updateNode changes the environment's Node as the admin, retrying on
// conflicts with the node's own status writes.
func updateNode(t *testing.T, n *agent.APIPods, change func(*v1.Node)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		change(node)
		_, err = n.Admin.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update node %s: %v", n.Name, err)
	}
}

// TestCriticalPodPreemption: a critical pod bound to a node whose
// resources a lower-priority pod holds is admitted once the node stopped
// that pod, which ends Failed with upstream's reason, condition and event
// (upstream's CriticalPodAdmissionHandler).
func TestCriticalPodPreemption(t *testing.T) {
	n := upNode(t, "preemption", "")
	ctx := context.Background()

	// An extended resource of the test's, two of it on the node, so that
	// no other pod's requests matter.
	const widget v1.ResourceName = "actorlet.test/widget"
	setWidgets := func(q *resource.Quantity) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := n.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if q == nil {
				delete(node.Status.Capacity, widget)
				delete(node.Status.Allocatable, widget)
			} else {
				node.Status.Capacity[widget], node.Status.Allocatable[widget] = *q, *q
			}
			_, err = n.Admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("node %s's %s: %v", n.Name, widget, err)
		}
	}
	two := resource.MustParse("2")
	setWidgets(&two)
	t.Cleanup(func() { setWidgets(nil) })
	agent.Eventually(t, "the node sees its widgets", 30*time.Second, func() error {
		node, err := n.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if q := node.Status.Allocatable[widget]; q.Cmp(two) != 0 {
			return fmt.Errorf("allocatable %s: %s", widget, q.String())
		}
		return nil
	})
	widgets := func(count string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			r := v1.ResourceList{widget: resource.MustParse(count)}
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: r, Limits: r}
		}
	}
	pod := func(name string, mutate ...func(*v1.Pod)) *v1.Pod {
		p := n.NewPod(name, nil, n.Sleeper("c"))
		grace := int64(2)
		p.Spec.TerminationGracePeriodSeconds = &grace
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	n.Run(t, pod("holder", widgets("2")))
	// Not critical: refused, nothing stopped for it.
	failedWith(t, n, rejection{pod: n.Create(t, pod("ordinary", widgets("1"))), reason: "OutOf" + string(widget),
		message: "Node didn't have enough resource: " + string(widget) + ", requested: 1, used: 2, capacity: 2"})
	critical := n.Create(t, pod("critical", widgets("1"), func(p *v1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" }))
	n.Running(t, critical.Name, 60*time.Second)

	holder, err := n.Get("holder")
	if err != nil {
		t.Fatal(err)
	}
	if holder.Status.Phase != v1.PodFailed || holder.Status.Reason != "Preempting" || holder.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("holder: phase %s, reason %q, message %q", holder.Status.Phase, holder.Status.Reason, holder.Status.Message)
	}
	i := slices.IndexFunc(holder.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	if i < 0 || holder.Status.Conditions[i].Status != v1.ConditionTrue || holder.Status.Conditions[i].Reason != v1.PodReasonTerminationByKubelet ||
		holder.Status.Conditions[i].Message != "Pod was preempted by Kubelet to accommodate a critical pod." {
		t.Errorf("holder's conditions: %+v", holder.Status.Conditions)
	}
	n.Event(t, "holder", "Preempting", "Preempted in order to admit critical pod")
}

package podmanager

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWith(cpu, mem string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

// podReq is a pod of one container requesting the resources given.
func podReq(kv ...string) *v1.Pod {
	req := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		req[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

func mutate(p *v1.Pod, f func(*v1.Pod)) *v1.Pod {
	p = p.DeepCopy()
	f(p)
	return p
}

func withHostPort(p *v1.Pod, port int32, ip string, proto v1.Protocol) *v1.Pod {
	return mutate(p, func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto})
	})
}

func withSysctls(p *v1.Pod, names ...string) *v1.Pod {
	return mutate(p, func(p *v1.Pod) {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &v1.PodSecurityContext{}
		}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
	})
}

func TestAdmit(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{
			{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule},
			{Key: "evict", Effect: v1.TaintEffectNoExecute},
		}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			"example.com/gpu":           resource.MustParse("2"),
			"hugepages-2Mi":             resource.MustParse("0"),
		}},
	}
	tolerating := func(p *v1.Pod) *v1.Pod {
		return mutate(p, func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "evict", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
		})
	}
	sysctls, err := NewSysctlAllowlist(append(SafeSysctls("5.10.0"), "kernel.msg*", "net.core.somaxconn"))
	if err != nil {
		t.Fatal(err)
	}
	other := "linux"
	if runtime.GOOS == "linux" {
		other = "windows"
	}
	for _, tc := range []struct {
		name         string
		pod          *v1.Pod
		admitted     []*v1.Pod
		maxPods      int
		pressure     []v1.NodeConditionType
		static       bool
		shuttingDown bool
		reason       string
		message      string
		affinity     bool
	}{
		{name: "fits", pod: tolerating(podWith("500m", "100Mi")), admitted: []*v1.Pod{podWith("1", "")}, maxPods: 10},
		{name: "best effort always fits resources", pod: tolerating(podWith("", "")), admitted: []*v1.Pod{podWith("2", "1Gi")}, maxPods: 10},
		{name: "too many pods", pod: tolerating(podWith("", "")), admitted: []*v1.Pod{podWith("", ""), podWith("", "")}, maxPods: 2,
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
		{name: "too much cpu", pod: tolerating(podWith("1500m", "")), admitted: []*v1.Pod{podWith("1", "")}, maxPods: 10,
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{name: "too much memory", pod: tolerating(podWith("", "2Gi")), maxPods: 10,
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		{name: "limits stand in for requests", pod: tolerating(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}}}}}}), maxPods: 10, reason: "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "the largest init container counts", pod: tolerating(&v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2500m")}}}},
			Containers:     []v1.Container{{Name: "c"}}}}), maxPods: 10, reason: "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"},
		{name: "ephemeral storage", pod: tolerating(podReq("ephemeral-storage", "6Gi")), admitted: []*v1.Pod{podReq("ephemeral-storage", "5Gi")}, maxPods: 10,
			reason: "OutOfephemeral-storage", message: "Node didn't have enough resource: ephemeral-storage, requested: 6442450944, used: 5368709120, capacity: 10737418240"},
		{name: "extended resource", pod: tolerating(podReq("example.com/gpu", "3")), maxPods: 10,
			reason: "OutOfexample.com/gpu", message: "Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2"},
		{name: "extended resource fits", pod: tolerating(podReq("example.com/gpu", "1")), admitted: []*v1.Pod{podReq("example.com/gpu", "1")}, maxPods: 10},
		{name: "extended resource the node does not list is not checked", pod: tolerating(podReq("other.io/fpga", "1")), maxPods: 10},
		{name: "hugepages", pod: tolerating(podReq("hugepages-2Mi", "2Mi", "memory", "2Mi")), maxPods: 10,
			reason: "OutOfhugepages-2Mi", message: "Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0"},
		{name: "hugepages the node does not list", pod: tolerating(podReq("hugepages-1Gi", "1Gi", "memory", "2Mi")), maxPods: 10,
			reason: "OutOfhugepages-1Gi", message: "Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
		{name: "node selector", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} })), maxPods: 10,
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector", affinity: true},
		{name: "node selector matches", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} })), maxPods: 10},
		{name: "architecture", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "s390x-not"} })), maxPods: 10,
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector", affinity: true},
		{name: "required node affinity", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"b", "c"}}}}}}}}
		})), maxPods: 10, reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector", affinity: true},
		{name: "affinity and resources: resources first, no re-read", pod: tolerating(mutate(podWith("3", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} })),
			maxPods: 10, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "node name", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) { p.Spec.NodeName = "n2" })), maxPods: 10,
			reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "host port taken", pod: tolerating(withHostPort(podWith("", ""), 8080, "", "")), admitted: []*v1.Pod{withHostPort(podWith("", ""), 8080, "10.0.0.1", v1.ProtocolTCP)}, maxPods: 10,
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port on another address", pod: tolerating(withHostPort(podWith("", ""), 8080, "10.0.0.2", "")), admitted: []*v1.Pod{withHostPort(podWith("", ""), 8080, "10.0.0.1", "")}, maxPods: 10},
		{name: "host port of another protocol", pod: tolerating(withHostPort(podWith("", ""), 8080, "", v1.ProtocolUDP)), admitted: []*v1.Pod{withHostPort(podWith("", ""), 8080, "", "")}, maxPods: 10},
		{name: "NoExecute taint not tolerated", pod: podWith("", ""), maxPods: 10,
			reason: "TaintToleration", message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "static pods ignore taints", pod: podWith("", ""), static: true, maxPods: 10},
		{name: "OS label", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: other} })), maxPods: 10,
			reason: "PodOSSelectorNodeLabelDoesNotMatch", message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{name: "OS field", pod: tolerating(mutate(podWith("", ""), func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.OSName(other)} })), maxPods: 10,
			reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "safe sysctl", pod: tolerating(withSysctls(podWith("", ""), "net.ipv4.tcp_syncookies", "kernel.shm_rmid_forced")), maxPods: 10},
		{name: "allowed unsafe sysctl and pattern", pod: tolerating(withSysctls(podWith("", ""), "kernel.msgmax", "net/core/somaxconn")), maxPods: 10},
		{name: "unsafe sysctl", pod: tolerating(withSysctls(podWith("", ""), "kernel.sem")), maxPods: 10,
			reason: "SysctlForbidden", message: `forbidden sysctl: "kernel.sem" not allowlisted`},
		{name: "net sysctl with host network", pod: tolerating(mutate(withSysctls(podWith("", ""), "net.core.somaxconn"), func(p *v1.Pod) { p.Spec.HostNetwork = true })), maxPods: 10,
			reason: "SysctlForbidden", message: `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		{name: "memory pressure refuses best effort", pod: tolerating(podWith("", "")), maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeMemoryPressure},
			reason: "Evicted", message: "The node had condition: [MemoryPressure]. "},
		{name: "memory pressure admits burstable", pod: tolerating(podWith("100m", "")), maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeMemoryPressure}},
		{name: "memory pressure admits best effort tolerating it", pod: mutate(tolerating(podWith("", "")), func(p *v1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})
		}), maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeMemoryPressure}},
		{name: "disk pressure refuses all", pod: tolerating(podWith("100m", "")), maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure},
			reason: "Evicted", message: "The node had condition: [MemoryPressure DiskPressure]. "},
		{name: "disk pressure admits critical", pod: mutate(tolerating(podWith("", "")), func(p *v1.Pod) { p.Spec.Priority = new(int32(2000000000)) }),
			maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeDiskPressure}},
		{name: "disk pressure admits static", pod: podWith("", ""), static: true, maxPods: 10, pressure: []v1.NodeConditionType{v1.NodeDiskPressure}},
		{name: "shutting down refuses critical pods too", pod: mutate(tolerating(podWith("", "")), func(p *v1.Pod) { p.Spec.Priority = new(int32(2000000000)) }),
			maxPods: 10, shuttingDown: true, reason: "NodeShutdown", message: "Pod was rejected as the node is shutting down."},
		{name: "shutting down: other reasons first", pod: podWith("", ""), maxPods: 10, shuttingDown: true,
			reason: "TaintToleration", message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admit(tc.pod, tc.admitted, Admission{Node: node, MaxPods: tc.maxPods, Allocatable: alloc, Sysctls: sysctls, Pressure: tc.pressure, Static: tc.static,
				ShuttingDown: tc.shuttingDown})
			switch {
			case tc.reason == "" && r != nil:
				t.Errorf("rejected: %+v", r)
			case tc.reason != "" && (r == nil || r.Reason != tc.reason || r.Message != tc.message || r.AffinityOnly != tc.affinity):
				t.Errorf("got %+v, want %s: %s (affinity only %v)", r, tc.reason, tc.message, tc.affinity)
			}
		})
	}
}

func TestSafeSysctls(t *testing.T) {
	for _, tc := range []struct {
		release string
		n       int
	}{
		{"6.1.0-18-amd64", 14}, {"4.5.0", 9}, {"4.15", 14}, {"3.10.0-1160.el7.x86_64", 5}, {"", 5}, {"garbage", 5},
	} {
		if got := SafeSysctls(tc.release); len(got) != tc.n {
			t.Errorf("%q: %d sysctls %v, want %d", tc.release, len(got), got, tc.n)
		}
	}
}

func TestNewSysctlAllowlist(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		err      string
	}{
		{patterns: []string{"kernel.msg*", "net.ipv4.route.min_pmtu", "kernel.shm_rmid_forced"}},
		{patterns: []string{"foo.bar"}, err: `allowedUnsafeSysctls: the sysctls "foo.bar" are not known to be namespaced`},
		{patterns: []string{"Kernel.msg"}, err: `allowedUnsafeSysctls: sysctl "Kernel.msg" must have at most 253 characters and match regex ` + sysctlPattern.String()},
	} {
		_, err := NewSysctlAllowlist(tc.patterns)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !reflect.DeepEqual(got, tc.err) {
			t.Errorf("%v: got %q, want %q", tc.patterns, got, tc.err)
		}
	}
}

func TestAdmitAppArmor(t *testing.T) {
	notEnabled := errors.New("AppArmor is not enabled on the host")
	profile := func(typ v1.AppArmorProfileType, name string) *v1.AppArmorProfile {
		p := &v1.AppArmorProfile{Type: typ}
		if name != "" || typ == v1.AppArmorProfileTypeLocalhost {
			p.LocalhostProfile = &name
		}
		return p
	}
	podProfile := func(p *v1.AppArmorProfile) *v1.Pod {
		return mutate(podWith("", ""), func(pod *v1.Pod) { pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: p} })
	}
	containerProfile := func(p *v1.AppArmorProfile) *v1.Pod {
		return mutate(podWith("", ""), func(pod *v1.Pod) { pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: p} })
	}
	annotated := func(v string) *v1.Pod {
		return mutate(podWith("", ""), func(pod *v1.Pod) {
			pod.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": v}
		})
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		host    error
		message string
	}{
		{name: "no profile", pod: podWith("", ""), host: notEnabled},
		{name: "unconfined", pod: podProfile(profile(v1.AppArmorProfileTypeUnconfined, "")), host: notEnabled},
		{name: "runtime default, no AppArmor", pod: podProfile(profile(v1.AppArmorProfileTypeRuntimeDefault, "")), host: notEnabled,
			message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "a container's profile", pod: containerProfile(profile(v1.AppArmorProfileTypeLocalhost, "k8s-x")), host: notEnabled,
			message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "the deprecated annotation", pod: annotated("runtime/default"), host: notEnabled,
			message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "the deprecated annotation, unconfined", pod: annotated("unconfined"), host: notEnabled},
		{name: "a host that enforces", pod: containerProfile(profile(v1.AppArmorProfileTypeLocalhost, "k8s-x"))},
		{name: "an empty localhost profile", pod: containerProfile(profile(v1.AppArmorProfileTypeLocalhost, " ")),
			message: `Cannot enforce AppArmor: invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:* ,}"`},
		{name: "an ephemeral container's empty localhost profile", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeRuntimeDefault, "")}
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug",
				SecurityContext: &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeLocalhost, "")}}}}
		}), message: `Cannot enforce AppArmor: invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:*,}"`},
		{name: "a running pod is not checked again", pod: mutate(podProfile(profile(v1.AppArmorProfileTypeRuntimeDefault, "")), func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }),
			host: notEnabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admitAppArmor(tc.pod, tc.host)
			switch {
			case tc.message == "" && r != nil:
				t.Errorf("rejected: %+v", r)
			case tc.message != "" && (r == nil || r.Reason != "AppArmor" || r.Message != tc.message):
				t.Errorf("got %+v, want AppArmor: %s", r, tc.message)
			}
		})
	}
}

// TestAdmitSupplementalGroupsPolicy checks upstream's refusal of
// supplementalGroupsPolicy: Strict on a node whose status.features does
// not say the runtime honours it, before the resources are looked at.
func TestAdmitSupplementalGroupsPolicy(t *testing.T) {
	policy := func(p v1.SupplementalGroupsPolicy) *v1.Pod {
		return mutate(podWith("", ""), func(pod *v1.Pod) {
			pod.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &p}
		})
	}
	node := func(f *v1.NodeFeatures) *v1.Node { return &v1.Node{Status: v1.NodeStatus{Features: f}} }
	const message = "SupplementalGroupsPolicy=Strict is not supported in this node"
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		rejected bool
	}{
		{name: "no policy", pod: podWith("", ""), node: node(nil)},
		{name: "Merge on a node without features", pod: policy(v1.SupplementalGroupsPolicyMerge), node: node(nil)},
		{name: "Strict on a node without features", pod: policy(v1.SupplementalGroupsPolicyStrict), node: node(nil), rejected: true},
		{name: "Strict without a Node", pod: policy(v1.SupplementalGroupsPolicyStrict), rejected: true},
		{name: "Strict on a node whose features leave it unset", pod: policy(v1.SupplementalGroupsPolicyStrict), node: node(&v1.NodeFeatures{}), rejected: true},
		{name: "Strict on a node without support", pod: policy(v1.SupplementalGroupsPolicyStrict),
			node: node(&v1.NodeFeatures{SupplementalGroupsPolicy: new(false)}), rejected: true},
		{name: "Strict on a node with support", pod: policy(v1.SupplementalGroupsPolicyStrict),
			node: node(&v1.NodeFeatures{SupplementalGroupsPolicy: new(true)})},
		// The policy is checked before the resources, as upstream.
		{name: "Strict and too much cpu", pod: mutate(policy(v1.SupplementalGroupsPolicyStrict), func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100")}
		}), node: node(nil), rejected: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admit(tc.pod, nil, Admission{Node: tc.node, MaxPods: 10, Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}})
			switch {
			case !tc.rejected && r != nil:
				t.Errorf("rejected: %+v", r)
			case tc.rejected && (r == nil || r.Reason != "SupplementalGroupsPolicyNotSupported" || r.Message != message):
				t.Errorf("got %+v, want SupplementalGroupsPolicyNotSupported: %s", r, message)
			}
		})
	}
}

// TestAppArmorHost checks upstream's (runc's) test of a host's AppArmor on
// a sysfs made for the test: the securityfs directory and the module's
// enabled parameter, "Y" followed by more.
func TestAppArmorHost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		securityf bool
		enabled   string // "" : no parameter file
		ok        bool
	}{
		{name: "no AppArmor at all"},
		{name: "no securityfs entry", enabled: "Y\n"},
		{name: "no module parameter", securityf: true},
		{name: "disabled", securityf: true, enabled: "N\n"},
		{name: "a lone Y", securityf: true, enabled: "Y"},
		{name: "enabled", securityf: true, enabled: "Y\n", ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := t.TempDir()
			if tc.securityf {
				if err := os.MkdirAll(filepath.Join(sys, "kernel/security/apparmor"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.enabled != "" {
				dir := filepath.Join(sys, "module/apparmor/parameters")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "enabled"), []byte(tc.enabled), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := appArmorHost(sys)
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && (err == nil || err.Error() != "AppArmor is not enabled on the host"):
				t.Errorf("error %v, want AppArmor is not enabled on the host", err)
			}
		})
	}
}

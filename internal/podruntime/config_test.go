package podruntime

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/cgroups"
)

func basePod() *v1.Pod {
	grace := int64(17)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1", UID: "uid-1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
		Spec: v1.PodSpec{
			NodeName: "node-a", ServiceAccountName: "sa", TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "c", Image: "busybox:1.36",
				Ports:                    []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile}},
		},
	}
}

func writeResolvConf(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte("# comment\nnameserver 192.0.2.53\nsearch example.org corp.example.\noptions ndots:2 edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSandboxConfig(t *testing.T) {
	pod := basePod()
	opts := Options{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: writeResolvConf(t)}
	cfg, err := SandboxConfig(pod, 2, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Metadata; m.Name != "web" || m.Namespace != "ns1" || m.Uid != "uid-1" || m.Attempt != 2 {
		t.Errorf("metadata %+v", m)
	}
	wantLabels := map[string]string{"app": "web", LabelPodName: "web", LabelPodNamespace: "ns1", LabelPodUID: "uid-1"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels %v", cfg.Labels)
	}
	if !reflect.DeepEqual(cfg.Annotations, pod.Annotations) {
		t.Errorf("annotations %v", cfg.Annotations)
	}
	if cfg.LogDirectory != "/var/log/pods/ns1_web_uid-1" || cfg.Hostname != "web" {
		t.Errorf("log dir %q hostname %q", cfg.LogDirectory, cfg.Hostname)
	}
	if cfg.Linux.CgroupParent != "/kubepods/poduid-1" {
		t.Errorf("cgroup parent %q", cfg.Linux.CgroupParent)
	}
	if len(cfg.PortMappings) != 2 || cfg.PortMappings[0].HostPort != 8080 || cfg.PortMappings[1].Protocol != runtimeapi.Protocol_UDP {
		t.Errorf("port mappings %v", cfg.PortMappings)
	}
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	if ns.Network != runtimeapi.NamespaceMode_POD || ns.Pid != runtimeapi.NamespaceMode_CONTAINER || ns.Ipc != runtimeapi.NamespaceMode_POD {
		t.Errorf("namespaces %v", ns)
	}
	wantDNS := &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"},
		Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.org", "corp.example"},
		Options:  []string{"ndots:5"}}
	if !reflect.DeepEqual(cfg.DnsConfig, wantDNS) {
		t.Errorf("DNS %v, want %v", cfg.DnsConfig, wantDNS)
	}
}

func TestSandboxConfigHostNamespacesAndSecurity(t *testing.T) {
	pod := basePod()
	pod.Spec.HostNetwork, pod.Spec.HostPID, pod.Spec.HostIPC = true, true, true
	uid, gid, fsg := int64(1000), int64(2000), int64(3000)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &fsg,
		SupplementalGroups: []int64{5}, Sysctls: []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
	cfg, err := SandboxConfig(pod, 0, Options{CgroupParentRoot: "/custom"})
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Linux.SecurityContext
	if sc.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE || sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_NODE || sc.NamespaceOptions.Ipc != runtimeapi.NamespaceMode_NODE {
		t.Errorf("host namespaces %v", sc.NamespaceOptions)
	}
	if sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup.GetValue() != 2000 || !reflect.DeepEqual(sc.SupplementalGroups, []int64{3000, 5}) {
		t.Errorf("security context %v", sc)
	}
	if cfg.Linux.Sysctls["net.core.somaxconn"] != "1024" || cfg.Linux.CgroupParent != "/custom/poduid-1" || cfg.Hostname != "" {
		t.Errorf("sysctls %v cgroup %q hostname %q", cfg.Linux.Sysctls, cfg.Linux.CgroupParent, cfg.Hostname)
	}
	// Host network + ClusterFirst uses the host's resolver (Default); no
	// resolv.conf means a local resolver.
	if !reflect.DeepEqual(cfg.DnsConfig.Servers, []string{"127.0.0.1"}) {
		t.Errorf("DNS %v", cfg.DnsConfig)
	}
}

func TestDNSPolicies(t *testing.T) {
	resolv := writeResolvConf(t)
	five := "5"
	tests := []struct {
		name   string
		policy v1.DNSPolicy
		host   bool
		dns    []string
		extra  *v1.PodDNSConfig
		want   *runtimeapi.DNSConfig
	}{
		{"ClusterFirst without cluster DNS falls back to host", v1.DNSClusterFirst, false, nil, nil,
			&runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"example.org", "corp.example"}, Options: []string{"edns0", "ndots:2"}}},
		{"Default", v1.DNSDefault, false, []string{"10.96.0.10"}, nil,
			&runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"example.org", "corp.example"}, Options: []string{"edns0", "ndots:2"}}},
		{"ClusterFirstWithHostNet", v1.DNSClusterFirstWithHostNet, true, []string{"10.96.0.10"}, nil,
			&runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.org", "corp.example"}, Options: []string{"ndots:5"}}},
		{"None with dnsConfig", v1.DNSNone, false, []string{"10.96.0.10"},
			&v1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"a.b"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "rotate"}}},
			&runtimeapi.DNSConfig{Servers: []string{"1.2.3.4"}, Searches: []string{"a.b"}, Options: []string{"ndots:5", "rotate"}}},
		{"ClusterFirst merges dnsConfig", v1.DNSClusterFirst, false, []string{"10.96.0.10"},
			&v1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "1.2.3.4"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "edns0"}}},
			&runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "1.2.3.4"}, Searches: []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.org", "corp.example"}, Options: []string{"edns0", "ndots:5"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tt.policy, tt.host, tt.extra
			got, evs, err := podDNSConfig(pod, Options{ClusterDNS: tt.dns, ClusterDomain: "cluster.local", ResolvConf: resolv})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
			// Only ClusterFirst without a cluster DNS calls for events: on
			// the Node and on the pod, as upstream's.
			var want []dnsEvent
			if tt.dns == nil {
				want = []dnsEvent{{node: true, reason: "MissingClusterDNS", message: missingClusterDNS},
					{reason: "MissingClusterDNS", message: `pod: "web_ns1(uid-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`}}
			}
			if !reflect.DeepEqual(evs, want) {
				t.Errorf("events %+v\nwant %+v", evs, want)
			}
		})
	}
}

func TestPodHostname(t *testing.T) {
	pod := basePod()
	pod.Spec.Hostname, pod.Spec.Subdomain = "h", "sub"
	yes := true
	pod.Spec.SetHostnameAsFQDN = &yes
	if h, err := podHostname(pod, "cluster.local"); err != nil || h != "h.sub.ns1.svc.cluster.local" {
		t.Errorf("FQDN hostname %q %v", h, err)
	}
	pod.Spec.SetHostnameAsFQDN = nil
	pod.Spec.Hostname = ""
	pod.Name = "a-very-long-pod-name-that-is-longer-than-sixty-three-characters-------x"
	if h, _ := podHostname(pod, "cluster.local"); len(h) > 63 || h[len(h)-1] == '-' {
		t.Errorf("truncated hostname %q", h)
	}
}

func TestContainerConfig(t *testing.T) {
	pod := basePod()
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{
		{Name: "A", Value: "alpha"},
		{Name: "B", Value: "$(A)-beta-$$(A)-$(MISSING)"},
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
		{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "NOTE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}},
		{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "SA", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
		{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
		{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "MEM_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "CPU_REQ_M", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
		{Name: "CPU_LIM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
	}
	c.Command = []string{"sh", "-c", "echo $(A) $(POD_NAME)"}
	c.Args = []string{"$(B)"}
	c.WorkingDir, c.TTY, c.Stdin = "/w", true, true
	c.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
	}
	no, yes, uid := false, true, int64(42)
	c.SecurityContext = &v1.SecurityContext{RunAsUser: &uid, ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
		Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}}}
	opts := Options{NodeIP: "192.0.2.1", NodeMemoryCapacity: 1 << 30}
	cfg, err := ContainerConfig(context.Background(), pod, c, 3, []string{"10.244.0.5", "fd00::5"}, "sha256:abc", nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	want := map[string]string{"A": "alpha", "B": "alpha-beta-$(A)-$(MISSING)", "POD_NAME": "web", "POD_NS": "ns1", "POD_UID": "uid-1",
		"APP": "web", "NOTE": "x", "NODE": "node-a", "SA": "sa", "IP": "10.244.0.5", "IPS": "10.244.0.5,fd00::5", "HOST_IP": "192.0.2.1",
		"MEM_MI": "128", "CPU_REQ_M": "250", "CPU_LIM": "2"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env %v\nwant %v", env, want)
	}
	if !reflect.DeepEqual(cfg.Command, []string{"sh", "-c", "echo alpha web"}) || !reflect.DeepEqual(cfg.Args, []string{"alpha-beta-$(A)-$(MISSING)"}) {
		t.Errorf("command %q args %q", cfg.Command, cfg.Args)
	}
	if cfg.LogPath != "c/3.log" || cfg.Metadata.Attempt != 3 || cfg.Image.Image != "sha256:abc" || cfg.Image.UserSpecifiedImage != "busybox:1.36" {
		t.Errorf("log path %q metadata %v image %v", cfg.LogPath, cfg.Metadata, cfg.Image)
	}
	if cfg.WorkingDir != "/w" || !cfg.Tty || !cfg.Stdin {
		t.Errorf("workdir/tty/stdin %q %v %v", cfg.WorkingDir, cfg.Tty, cfg.Stdin)
	}
	wantLabels := map[string]string{LabelPodName: "web", LabelPodNamespace: "ns1", LabelPodUID: "uid-1", LabelContainerName: "c"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels %v", cfg.Labels)
	}
	a := cfg.Annotations
	if a[AnnotationContainerHash] != strconv.FormatUint(HashContainer(c), 16) || a[AnnotationContainerRestartCount] != "3" ||
		a[AnnotationContainerTerminationMessagePath] != "/dev/termination-log" || a[AnnotationContainerTerminationMessagePolicy] != "File" ||
		a[AnnotationPodTerminationGracePeriod] != "17" ||
		a[AnnotationContainerPorts] != `[{"hostPort":8080,"containerPort":80,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP"}]` {
		t.Errorf("annotations %v", a)
	}
	r := cfg.Linux.Resources
	// Burstable: 1000 - 1000*64Mi/1Gi = 938.
	if r.CpuShares != 256 || r.CpuQuota != 150000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 128<<20 || r.OomScoreAdj != 938 {
		t.Errorf("resources %v", r)
	}
	sc := cfg.Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 42 || !sc.ReadonlyRootfs || !sc.NoNewPrivs || sc.Privileged ||
		!reflect.DeepEqual(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !reflect.DeepEqual(sc.Capabilities.DropCapabilities, []string{"ALL"}) ||
		len(sc.MaskedPaths) == 0 || len(sc.ReadonlyPaths) == 0 {
		t.Errorf("security context %v", sc)
	}
}

func TestContainerResourcesByQOS(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name       string
		res        v1.ResourceRequirements
		wantQOS    v1.PodQOSClass
		wantShares int64
		wantQuota  int64
		wantOOM    int64
	}{
		{"best effort", v1.ResourceRequirements{}, v1.PodQOSBestEffort, 2, 0, 1000},
		{"guaranteed", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("1Gi")},
			Requests: v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("1Gi")}},
			v1.PodQOSGuaranteed, 2048, 200000, -997},
		{"burstable tiny request", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("1m"), v1.ResourceMemory: q("1")}},
			v1.PodQOSBurstable, 2, 0, 999},
		{"burstable huge request", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: q("4Gi")}},
			v1.PodQOSBurstable, 2, 0, 3},
		{"tiny cpu limit", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("1m")}},
			// Burstable without a memory request: 1000 is BestEffort's.
			v1.PodQOSBurstable, 2, 1000, 999},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.Containers[0].Resources = tt.res
			if got := cgroups.QOSClass(pod); got != tt.wantQOS {
				t.Fatalf("QoS %s, want %s", got, tt.wantQOS)
			}
			r, err := containerResources(pod, &pod.Spec.Containers[0], Options{NodeMemoryCapacity: 2 << 30})
			if err != nil {
				t.Fatal(err)
			}
			if r.CpuShares != tt.wantShares || r.CpuQuota != tt.wantQuota || r.OomScoreAdj != tt.wantOOM {
				t.Errorf("shares %d quota %d oom %d", r.CpuShares, r.CpuQuota, r.OomScoreAdj)
			}
		})
	}
}

func TestHashContainer(t *testing.T) {
	base := v1.Container{Name: "c", Image: "i:1", Command: []string{"sleep"}}
	h := HashContainer(&base)
	if HashContainer(&base) != h {
		t.Fatal("hash not stable")
	}
	changes := map[string]func(c *v1.Container){
		"image":   func(c *v1.Container) { c.Image = "i:2" },
		"command": func(c *v1.Container) { c.Command = []string{"sh"} },
		"args":    func(c *v1.Container) { c.Args = []string{"1"} },
		"env":     func(c *v1.Container) { c.Env = []v1.EnvVar{{Name: "X", Value: "1"}} },
		"ports":   func(c *v1.Container) { c.Ports = []v1.ContainerPort{{ContainerPort: 1}} },
	}
	for name, change := range changes {
		c := base
		change(&c)
		if HashContainer(&c) == h {
			t.Errorf("changing %s keeps the hash", name)
		}
	}
	c := base
	c.ImagePullPolicy = v1.PullAlways
	c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	if HashContainer(&c) != h {
		t.Error("pull policy or resources changed the hash")
	}
}

func TestPullPolicy(t *testing.T) {
	for img, want := range map[string]v1.PullPolicy{
		"busybox":                   v1.PullAlways,
		"busybox:latest":            v1.PullAlways,
		"busybox:1.36":              v1.PullIfNotPresent,
		"localhost:5000/busybox":    v1.PullAlways,
		"localhost:5000/busybox:v1": v1.PullIfNotPresent,
		"busybox@sha256:abcd":       v1.PullIfNotPresent,
	} {
		if got := PullPolicy(&v1.Container{Image: img}); got != want {
			t.Errorf("PullPolicy(%s) = %s, want %s", img, got, want)
		}
	}
	if got := PullPolicy(&v1.Container{Image: "busybox", ImagePullPolicy: v1.PullNever}); got != v1.PullNever {
		t.Errorf("explicit policy overridden: %s", got)
	}
}

// TestContainerConfigCDIDevices: a container gets the CDI devices the
// pass was given for it, in order, and another container none.
func TestContainerConfigCDIDevices(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "gpu", Image: "i"}, {Name: "plain", Image: "i"}}}}
	ctx := WithCDIDevices(context.Background(), map[string][]string{"gpu": {"example.com/gpu=0", "example.com/gpu=1"}})
	for _, tc := range []struct {
		container int
		want      []*runtimeapi.CDIDevice
	}{
		{0, []*runtimeapi.CDIDevice{{Name: "example.com/gpu=0"}, {Name: "example.com/gpu=1"}}},
		{1, nil},
	} {
		cfg, err := ContainerConfig(ctx, pod, &pod.Spec.Containers[tc.container], 0, nil, "i", nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfg.CDIDevices, tc.want) {
			t.Errorf("container %d: CDI devices %v, want %v", tc.container, cfg.CDIDevices, tc.want)
		}
	}
}

package podruntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/testutil"
	"github.com/actorlet/actorlet/internal/volume"
)

// localhostLines are the lines every managed hosts file starts with after
// its header.
const localhostLines = "127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

var (
	oneAlias   = []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}}}
	twoAliases = []v1.HostAlias{
		{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}},
		{IP: "456.78.90.123", Hostnames: []string{"park", "doo", "boo"}},
	}
)

// The cases are upstream's TestManagedHostsFileContent.
func TestManagedHostsFileContent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ips      []string
		hostname string
		domain   string
		aliases  []v1.HostAlias
		want     string
	}{
		{"hostname only", []string{"123.45.67.89"}, "podFoo", "", []v1.HostAlias{},
			"# Kubernetes-managed hosts file.\n" + localhostLines + "123.45.67.89\tpodFoo\n"},
		{"with a domain", []string{"203.0.113.1"}, "podFoo", "domainFoo", nil,
			"# Kubernetes-managed hosts file.\n" + localhostLines + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n"},
		{"an alias", []string{"203.0.113.1"}, "podFoo", "domainFoo", oneAlias,
			"# Kubernetes-managed hosts file.\n" + localhostLines + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n" +
				"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n"},
		{"two aliases", []string{"203.0.113.1"}, "podFoo", "domainFoo", twoAliases,
			"# Kubernetes-managed hosts file.\n" + localhostLines + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n" +
				"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n"},
		{"dual stack", []string{"203.0.113.1", "fd00::6"}, "podFoo", "domainFoo", nil,
			"# Kubernetes-managed hosts file.\n" + localhostLines + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\nfd00::6\tpodFoo.domainFoo\tpodFoo\n"},
		{"no IP", nil, "podFoo", "", oneAlias,
			"# Kubernetes-managed hosts file.\n" + localhostLines + "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(managedHostsFileContent(tc.ips, tc.hostname, tc.domain, tc.aliases)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The cases are upstream's TestNodeHostsFileContent.
func TestNodeHostsFileContent(t *testing.T) {
	node1 := "# hosts file for testing.\n" + localhostLines + "123.45.67.89\tsome.domain\n"
	node2 := "# another hosts file for testing.\n" + localhostLines + "12.34.56.78\tanother.domain\n"
	const header = "# Kubernetes-managed hosts file (host network).\n"
	for _, tc := range []struct {
		name    string
		node    string
		aliases []v1.HostAlias
		want    string
	}{
		{"file 1", node1, []v1.HostAlias{}, header + node1},
		{"file 2", node2, nil, header + node2},
		{"file 1 with an alias", node1, oneAlias, header + node1 + "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n"},
		{"file 2 with two aliases", node2, twoAliases,
			header + node2 + "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hosts")
			if err := os.WriteFile(p, []byte(tc.node), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := nodeHostsFileContent(p, tc.aliases)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if _, err := nodeHostsFileContent(filepath.Join(t.TempDir(), "none"), nil); err == nil {
		t.Error("a missing node hosts file was read")
	}
}

// The cases are upstream's TestTruncatePodHostname.
func TestTruncatePodHostname(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"valid", "test.pod.hostname", "test.pod.hostname"},
		{"too long", "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567.",
			"1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567"},
		{"ends with .", "1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456.1234567.",
			"1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456"},
		{"ends with -", "1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456-1234567.",
			"1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := truncatePodHostname("test-pod", tc.in); err != nil || got != tc.want {
				t.Errorf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
	if _, err := truncatePodHostname("p", strings.Repeat("-", 70)); err == nil {
		t.Error("a hostname of dashes was truncated to nothing without an error")
	}
}

// The cases are upstream's TestGeneratePodHostNameAndDomain, and
// hostnameOverride with a subdomain and an empty cluster domain.
func TestPodHostnameAndDomain(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name, podName, hostname, subdomain string
		override                           *string
		clusterDomain                      string
		wantHostname, wantDomain, wantErr  string
	}{
		{name: "the pod's name", podName: "test-pod", wantHostname: "test-pod"},
		{name: "spec.hostname", podName: "test-pod", hostname: "custom-hostname", wantHostname: "custom-hostname"},
		{name: "a subdomain", podName: "test-pod", subdomain: "my-subdomain",
			wantHostname: "test-pod", wantDomain: "my-subdomain.default.svc.cluster.local"},
		{name: "hostname and subdomain", podName: "test-pod", hostname: "custom-hostname", subdomain: "my-subdomain",
			wantHostname: "custom-hostname", wantDomain: "my-subdomain.default.svc.cluster.local"},
		{name: "hostnameOverride wins, without a domain", podName: "test-pod", hostname: "custom-hostname", subdomain: "my-subdomain",
			override: str("override-hostname"), wantHostname: "override-hostname"},
		{name: "an invalid hostnameOverride", podName: "test-pod", override: str("Invalid-Hostname-!"),
			wantErr: `pod HostnameOverride "Invalid-Hostname-!" is not a valid DNS subdomain`},
		{name: "a dotted hostnameOverride", podName: "test-pod", override: str("valid.hostname"), wantHostname: "valid.hostname"},
		{name: "a long hostnameOverride is truncated", podName: "test-pod", override: str(strings.Repeat("a", 62) + ".b.c"),
			wantHostname: strings.Repeat("a", 62)},
		{name: "a long pod name is truncated", podName: strings.Repeat("a", 65), wantHostname: strings.Repeat("a", 63)},
		{name: "an invalid hostname", podName: "test-pod", hostname: "Invalid-Hostname-!",
			wantErr: `pod Hostname "Invalid-Hostname-!" is not a valid DNS label`},
		{name: "an invalid subdomain", podName: "test-pod", subdomain: "invalid_subdomain",
			wantErr: `pod Subdomain "invalid_subdomain" is not a valid DNS label`},
		{name: "a hostname too long", podName: "test-pod", hostname: strings.Repeat("a", 64),
			wantErr: "must be no more than 63 characters"},
		{name: "an empty cluster domain leaves the trailing dot", podName: "test-pod", subdomain: "s", clusterDomain: "-",
			wantHostname: "test-pod", wantDomain: "s.default.svc."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.podName, Namespace: "default"},
				Spec: v1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain, HostnameOverride: tc.override}}
			cd := tc.clusterDomain
			switch cd {
			case "":
				cd = "cluster.local"
			case "-":
				cd = ""
			}
			h, d, err := podHostnameAndDomain(pod, cd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || h != tc.wantHostname || d != tc.wantDomain {
				t.Errorf("got %q %q %v, want %q %q", h, d, err, tc.wantHostname, tc.wantDomain)
			}
		})
	}
}

// The cases are upstream's TestGetNodenameForKernel.
func TestKernelHostname(t *testing.T) {
	const long = "1234567.1234567.1234567.1234567.1234567.1234567.1234567" // 55
	for _, tc := range []struct {
		name, hostname, domain string
		fqdn                   bool
		want, wantErr          string
	}{
		{"no domain", "test.pod.hostname", "", false, "test.pod.hostname", ""},
		{"no domain, as FQDN", "test.pod.hostname", "", true, "test.pod.hostname", ""},
		{"a domain", "test.pod.hostname", "svc.subdomain.local", false, "test.pod.hostname", ""},
		{"a domain, as FQDN", "test.pod.hostname", "svc.subdomain.local", true, "test.pod.hostname.svc.subdomain.local", ""},
		{"too long but short asked", "1234567.1234567", long, false, "1234567.1234567", ""},
		{"too long as FQDN", "1234567.1234567", long, true, "",
			"failed to construct FQDN from pod hostname and cluster domain, FQDN 1234567.1234567." + long +
				" is too long (64 characters is the max, 71 characters requested)"},
		{"64 characters fit", "a", strings.Repeat("b", 62), true, "a." + strings.Repeat("b", 62), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kernelHostname(tc.hostname, tc.domain, &tc.fqdn)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
	if got, _ := kernelHostname("h", "d", nil); got != "h" {
		t.Errorf("setHostnameAsFQDN unset: %q", got)
	}
}

// TestSandboxHostname checks the hostname the sandbox is asked for, and
// that an FQDN too long fails the sandbox's configuration.
func TestSandboxHostname(t *testing.T) {
	yes := true
	override := "override-host"
	for _, tc := range []struct {
		name    string
		mutate  func(*v1.Pod)
		want    string
		wantErr string
	}{
		{"the pod's name", func(*v1.Pod) {}, "web", ""},
		{"the FQDN", func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "h", "sub", &yes },
			"h.sub.ns1.svc.cluster.local", ""},
		{"no FQDN without a subdomain", func(p *v1.Pod) { p.Spec.SetHostnameAsFQDN = &yes }, "web", ""},
		{"hostnameOverride with a subdomain", func(p *v1.Pod) { p.Spec.Subdomain, p.Spec.HostnameOverride = "sub", &override },
			"override-host", ""},
		{"none on the host network", func(p *v1.Pod) { p.Spec.HostNetwork = true }, "", ""},
		{"an FQDN too long", func(p *v1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = strings.Repeat("h", 40), "sub", &yes
		}, "", "failed to construct FQDN from pod hostname and cluster domain, FQDN " + strings.Repeat("h", 40) +
			".sub.ns1.svc.cluster.local is too long (64 characters is the max, 66 characters requested)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			tc.mutate(pod)
			cfg, err := SandboxConfig(pod, 0, Options{ClusterDomain: "cluster.local", ClusterDNS: []string{"10.96.0.10"}})
			if testutil.WantErrText(t, err, tc.wantErr) {
				return
			}
			if cfg.Hostname != tc.want {
				t.Errorf("hostname %q, want %q", cfg.Hostname, tc.want)
			}
		})
	}
}

// TestHostsMount checks when a container gets the pod's hosts file, as
// upstream's TestMakeMountsEtcHostsFile, and what the file holds.
func TestHostsMount(t *testing.T) {
	node := filepath.Join(t.TempDir(), "node-hosts")
	if err := os.WriteFile(node, []byte("127.0.0.1\tlocalhost\n192.0.2.9\tnode-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(old string) { nodeHostsFile = old }(nodeHostsFile)
	nodeHostsFile = node
	vols := map[string]volume.Mounted{"etchosts": {Name: "etchosts", Path: "/mnt/disk"}}
	for _, tc := range []struct {
		name     string
		mutate   func(*v1.Pod)
		ips      []string
		mounts   []v1.VolumeMount
		noRoot   bool
		want     string // the file's content; "" means no mount
		wantVols int
	}{
		{name: "pod network", ips: []string{"192.168.0.1"},
			want: managedHostsHeader + localhostLines + "192.168.0.1\tweb\n"},
		{name: "pod network, no IP yet"},
		{name: "host network", mutate: func(p *v1.Pod) { p.Spec.HostNetwork = true }, ips: []string{"192.168.0.1"},
			want: managedHostsHeaderWithHostNetwork + "127.0.0.1\tlocalhost\n192.0.2.9\tnode-a\n"},
		{name: "host network, no IP", mutate: func(p *v1.Pod) { p.Spec.HostNetwork = true; p.Spec.HostAliases = oneAlias },
			want: managedHostsHeaderWithHostNetwork + "127.0.0.1\tlocalhost\n192.0.2.9\tnode-a\n" +
				"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n"},
		{name: "the container mounts its own", ips: []string{"192.168.0.1"},
			mounts: []v1.VolumeMount{{Name: "etchosts", MountPath: "/etc/hosts"}}, wantVols: 1},
		{name: "a mount elsewhere", ips: []string{"192.168.0.1"},
			mounts: []v1.VolumeMount{{Name: "etchosts", MountPath: "/etc/hosts2"}}, wantVols: 1,
			want: managedHostsHeader + localhostLines + "192.168.0.1\tweb\n"},
		{name: "subdomain, hostname, aliases", ips: []string{"10.0.0.5", "fd00::5"},
			mutate: func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain, p.Spec.HostAliases = "h", "sub", twoAliases },
			want: managedHostsHeader + localhostLines + "10.0.0.5\th.sub.ns1.svc.cluster.local\th\nfd00::5\th.sub.ns1.svc.cluster.local\th\n" +
				"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n"},
		{name: "without a root directory", ips: []string{"192.168.0.1"}, noRoot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = tc.mounts
			opts := Options{ClusterDomain: "cluster.local", RootDir: filepath.Join(t.TempDir(), "root")}
			if tc.noRoot {
				opts.RootDir = ""
			}
			got, err := containerMounts(pod, c, vols, tc.ips, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(got) != tc.wantVols {
					t.Fatalf("mounts %v, want only the container's own", got)
				}
				if _, err := os.Stat(PodHostsFile(opts.RootDir, pod.UID)); opts.RootDir != "" && !os.IsNotExist(err) {
					t.Errorf("a hosts file written for no mount: %v", err)
				}
				return
			}
			if len(got) != tc.wantVols+1 {
				t.Fatalf("mounts %v", got)
			}
			m := got[len(got)-1]
			file := filepath.Join(opts.RootDir, "pods", string(pod.UID), "etc-hosts")
			if m.ContainerPath != "/etc/hosts" || m.HostPath != file || m.Readonly {
				t.Errorf("mount %v", m)
			}
			content, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if string(content) != tc.want {
				t.Errorf("content\n%s\nwant\n%s", content, tc.want)
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
				t.Errorf("mode %v", fi.Mode())
			}
		})
	}
}

// TestHostsFileRewrittenInPlace checks that a container's start rewrites
// the hosts file through the same inode, which running containers of the
// pod bind mount, with upstream's mode whatever it had.
func TestHostsFileRewrittenInPlace(t *testing.T) {
	pod := basePod()
	opts := Options{RootDir: t.TempDir()}
	if _, err := containerMounts(pod, &pod.Spec.Containers[0], nil, []string{"10.0.0.1"}, nil, opts); err != nil {
		t.Fatal(err)
	}
	file := PodHostsFile(opts.RootDir, pod.UID)
	before, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := containerMounts(pod, &pod.Spec.Containers[0], nil, []string{"10.0.0.2"}, nil, opts); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Mode().Perm() != 0o644 {
		t.Errorf("rewritten as another file or with mode %v", after.Mode())
	}
	if b, _ := os.ReadFile(file); !strings.HasSuffix(string(b), "10.0.0.2\tweb\n") {
		t.Errorf("content %q", b)
	}
}

// TestContainerMountsRefusesInvalidHostname checks that, as upstream, a
// hostname the kubelet cannot make fails the container's configuration.
func TestContainerMountsRefusesInvalidHostname(t *testing.T) {
	pod := basePod()
	pod.Spec.Subdomain = "Bad_Sub"
	_, err := containerMounts(pod, &pod.Spec.Containers[0], nil, nil, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), `pod Subdomain "Bad_Sub" is not a valid DNS label`) {
		t.Errorf("error %v", err)
	}
}

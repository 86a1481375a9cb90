package containerenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// hostsClusterDomain is the node's: the pods' FQDNs end with it.
const hostsClusterDomain = "cluster.local"

// hostsSyncFrequency is the node's period of pod syncs, which is also that of
// its search for the directories of pods that are gone.
const hostsSyncFrequency = 10 * time.Second

// managedLocalhostLines are the lines of every kubelet-managed hosts file after
// its header, as upstream writes them.
const managedLocalhostLines = "127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

// TestHosts: the kubelet-managed /etc/hosts of pods on the pod network and
// on the host network, a container's own /etc/hosts, and the pod's
// hostname and FQDN (hostname, subdomain, setHostnameAsFQDN,
// hostnameOverride), asserted from inside the containers; and the FQDN too
// long for the kernel, which keeps the pod from starting with upstream's
// event.
func TestHosts(t *testing.T) {
	n := newEnvNode(t, agent.WithConfig(fmt.Sprintf("clusterDomain: %s\nsyncFrequency: %s\n", hostsClusterDomain, hostsSyncFrequency)))
	aliases := []v1.HostAlias{
		{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}},
		{IP: "10.9.8.7", Hostnames: []string{"baz.example.org"}},
	}
	aliasLines := "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n10.9.8.7\tbaz.example.org\n"

	t.Run("managed with hostname, subdomain and hostAliases", func(t *testing.T) {
		p := n.NewPod("managed", nil, n.Sleeper("a"), n.Sleeper("b"))
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.HostAliases = "web-0", "backends", aliases
		running := n.Run(t, p)
		fqdn := "web-0.backends." + n.NS + ".svc." + hostsClusterDomain
		want := "# Kubernetes-managed hosts file.\n" + managedLocalhostLines + hostsPodIPLines(t, running, fqdn+"\tweb-0") + aliasLines
		// Every container of the pod gets the same file.
		for _, c := range []string{"a", "b"} {
			n.Expect(t, "managed", c, "cat /etc/hosts", strings.TrimSuffix(want, "\n"))
		}
		n.Expect(t, "managed", "a", "hostname", "web-0")
		// The short name resolves to the FQDN through the hosts file.
		n.Expect(t, "managed", "a", "hostname -f", fqdn)
		n.Expect(t, "managed", "a", "cat /proc/sys/kernel/hostname", "web-0")
		// The file on the host is upstream's: ROOT/pods/UID/etc-hosts, 0644.
		file := filepath.Join(n.RootDir, "pods", string(running.UID), "etc-hosts")
		fi, err := os.Stat(file)
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: %v %v", file, fi, err)
		}
		// It goes with the pod's directory once the pod is gone: for a pod
		// without volumes, at the latest at the next search for orphaned
		// pod directories, every syncFrequency.
		if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), "managed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		agent.Eventually(t, "the pod's directory removed", 3*hostsSyncFrequency, func() error {
			if _, err := os.Stat(filepath.Dir(file)); !os.IsNotExist(err) {
				return fmt.Errorf("%s: %v", filepath.Dir(file), err)
			}
			return nil
		})
	})

	t.Run("the pod's name without hostname or subdomain", func(t *testing.T) {
		running := n.Run(t, n.NewPod("plain", nil, n.Sleeper("c")))
		want := "# Kubernetes-managed hosts file.\n" + managedLocalhostLines + hostsPodIPLines(t, running, "plain")
		n.Expect(t, "plain", "c", "cat /etc/hosts", strings.TrimSuffix(want, "\n"))
		n.Expect(t, "plain", "c", "hostname", "plain")
	})

	t.Run("a container's own /etc/hosts", func(t *testing.T) {
		// As upstream's KubeletManagedEtcHosts conformance spec: a file of
		// the host mounted at /etc/hosts stays as it is, while the other
		// container of the pod gets the managed file.
		own := filepath.Join(t.TempDir(), "hosts")
		const content = "192.0.2.44\tmine.example\n"
		if err := os.WriteFile(own, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		file := v1.HostPathFile
		vols := []v1.Volume{{Name: "own", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: own, Type: &file}}}}
		p := n.NewPod("own", vols,
			n.Sleeper("mounts", v1.VolumeMount{Name: "own", MountPath: "/etc/hosts"}),
			n.Sleeper("elsewhere", v1.VolumeMount{Name: "own", MountPath: "/etc/hosts-original"}))
		n.Run(t, p)
		n.Expect(t, "own", "mounts", "cat /etc/hosts", strings.TrimSuffix(content, "\n"))
		n.Expect(t, "own", "elsewhere", "head -1 /etc/hosts", "# Kubernetes-managed hosts file.")
		n.Expect(t, "own", "elsewhere", "cat /etc/hosts-original", strings.TrimSuffix(content, "\n"))
	})

	t.Run("host network: the node's hosts file and hostAliases", func(t *testing.T) {
		node, err := os.ReadFile("/etc/hosts")
		if err != nil {
			t.Fatal(err)
		}
		p := n.NewPod("hostnet", nil, n.Sleeper("c"))
		p.Spec.HostNetwork, p.Spec.HostAliases = true, aliases
		n.Run(t, p)
		want := "# Kubernetes-managed hosts file (host network).\n" + string(node) + aliasLines
		n.Expect(t, "hostnet", "c", "cat /etc/hosts", strings.TrimSuffix(want, "\n"))
		// The pod has the node's hostname: the kubelet sets none.
		host, err := os.Hostname()
		if err != nil {
			t.Fatal(err)
		}
		n.Expect(t, "hostnet", "c", "hostname", host)
	})

	t.Run("setHostnameAsFQDN", func(t *testing.T) {
		yes := true
		p := n.NewPod("fqdn", nil, n.Sleeper("c"))
		p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "sub", &yes
		n.Run(t, p)
		fqdn := "fqdn.sub." + n.NS + ".svc." + hostsClusterDomain
		n.Expect(t, "fqdn", "c", "hostname", fqdn)
		n.Expect(t, "fqdn", "c", "cat /proc/sys/kernel/hostname", fqdn)
		n.Expect(t, "fqdn", "c", "hostname -f", fqdn)
	})

	t.Run("setHostnameAsFQDN without a subdomain", func(t *testing.T) {
		yes := true
		p := n.NewPod("fqdn-nosub", nil, n.Sleeper("c"))
		p.Spec.SetHostnameAsFQDN = &yes
		n.Run(t, p)
		n.Expect(t, "fqdn-nosub", "c", "cat /proc/sys/kernel/hostname", "fqdn-nosub")
	})

	t.Run("hostnameOverride", func(t *testing.T) {
		// As upstream's "Override hostname of Pod" specs: the override is
		// the hostname and the whole name in the hosts file, whatever the
		// hostname and subdomain say.
		override := "override.example.host"
		p := n.NewPod("override", nil, n.Sleeper("c"))
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.HostnameOverride = "custom-host", "t", &override
		running := n.Run(t, p)
		n.Expect(t, "override", "c", "hostname", override)
		n.Expect(t, "override", "c", "hostname -f", override)
		want := "# Kubernetes-managed hosts file.\n" + managedLocalhostLines + hostsPodIPLines(t, running, override)
		n.Expect(t, "override", "c", "cat /etc/hosts", strings.TrimSuffix(want, "\n"))
	})

	t.Run("an FQDN too long", func(t *testing.T) {
		// As upstream: the sandbox is not created, FailedCreatePodSandBox
		// events quote the kernel's limit, the pod stays Pending.
		yes := true
		p := n.NewPod("toolong", nil, n.Sleeper("c"))
		p.Spec.Hostname = strings.Repeat("h", 40)
		p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "sub", &yes
		n.Create(t, p)
		fqdn := p.Spec.Hostname + ".sub." + n.NS + ".svc." + hostsClusterDomain
		n.Event(t, "toolong", "FailedCreatePodSandBox", fmt.Sprintf(
			"Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)",
			fqdn, len(fqdn)))
		n.Waiting(t, "toolong", "c", "ContainerCreating")
		time.Sleep(2 * time.Second)
		got, err := n.Get("toolong")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != v1.PodPending || got.Status.PodIP != "" {
			t.Errorf("phase %s, pod IP %q: want Pending without an IP", got.Status.Phase, got.Status.PodIP)
		}
	})
}

// hostsPodIPLines are the hosts file's lines of the pod's IPs, as the API shows
// them, each with names.
func hostsPodIPLines(t *testing.T, pod *v1.Pod, names string) string {
	t.Helper()
	if len(pod.Status.PodIPs) == 0 {
		t.Fatalf("pod %s has no IP in the API", pod.Name)
	}
	var b strings.Builder
	for _, ip := range pod.Status.PodIPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip.IP, names)
	}
	return b.String()
}

package podruntime

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/volume"
)

// etcHostsPath is where a container sees its hosts file, and where the
// node's own is.
const etcHostsPath = "/etc/hosts"

// nodeHostsFile is the node's hosts file, which the hosts files of pods on
// the host network copy; a variable for the tests.
var nodeHostsFile = etcHostsPath

// The first line of a kubelet-managed hosts file, as upstream writes it:
// people and tools look for it to tell who wrote the file.
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// hostsFilePerm is the mode of a pod's hosts file: readable by any user a
// container runs as.
const hostsFilePerm os.FileMode = 0o644

// PodHostsFile is the pod's hosts file on the host, ROOT/pods/UID/etc-hosts,
// which every container of the pod mounts at /etc/hosts.
func PodHostsFile(rootDir string, uid types.UID) string {
	return filepath.Join(volume.PodDir(rootDir, uid), "etc-hosts")
}

// shouldMountHostsFile is upstream's: a pod on the pod network gets the
// managed hosts file once it has an IP (not while its sandbox is made), a
// pod on the host network always.
func shouldMountHostsFile(pod *v1.Pod, podIPs []string) bool {
	return len(podIPs) > 0 || pod.Spec.HostNetwork
}

// hostsMount writes the pod's hosts file and returns its mount at
// /etc/hosts, as upstream's makeHostsMount; nil when the container gets
// none: shouldMountHostsFile says no, or a volume of its own is mounted at
// /etc/hosts. As upstream, the file is rewritten at every container start,
// in place: running containers bind mount its inode, which a rename would
// leave behind. Without opts.RootDir (no node directory, unit tests) there
// is nowhere to write it and the runtime's own /etc/hosts stays.
func hostsMount(pod *v1.Pod, c *v1.Container, podIPs []string, hostname, hostDomain string, opts Options) (*runtimeapi.Mount, error) {
	if !shouldMountHostsFile(pod, podIPs) || opts.RootDir == "" {
		return nil, nil
	}
	for _, m := range c.VolumeMounts {
		// Upstream compares the path as written: the container's own
		// volume wins only at exactly /etc/hosts.
		if m.MountPath == etcHostsPath {
			return nil, nil
		}
	}
	var content []byte
	if pod.Spec.HostNetwork {
		var err error
		if content, err = nodeHostsFileContent(nodeHostsFile, pod.Spec.HostAliases); err != nil {
			return nil, err
		}
	} else {
		content = managedHostsFileContent(podIPs, hostname, hostDomain, pod.Spec.HostAliases)
	}
	file := PodHostsFile(opts.RootDir, pod.UID)
	// The pod's directory is made by its volumes' set-up, or here for a
	// pod without volumes, with upstream's mode for pod directories.
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, content, hostsFilePerm); err != nil {
		return nil, err
	}
	// WriteFile keeps the mode of a file that exists, and the umask
	// narrows a new one's.
	if err := os.Chmod(file, hostsFilePerm); err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{
		ContainerPath:  etcHostsPath,
		HostPath:       file,
		SelinuxRelabel: selinuxEnabled(),
	}, nil
}

// nodeHostsFileContent is the hosts file of a pod on the host network, as
// upstream's: the node's hosts file under the header, then the pod's
// hostAliases.
func nodeHostsFileContent(path string, aliases []v1.HostAlias) ([]byte, error) {
	node, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderWithHostNetwork)
	b.Write(node)
	b.Write(hostsEntriesFromHostAliases(aliases))
	return b.Bytes(), nil
}

// managedHostsFileContent is the hosts file of a pod on the pod network, as
// upstream's: localhost and the IPv6 names, each of the pod's IPs with its
// hostname (its FQDN first when it has a domain), then its hostAliases.
func managedHostsFileContent(podIPs []string, hostname, hostDomain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if hostDomain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, hostDomain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostsEntriesFromHostAliases(aliases))
	return b.Bytes()
}

// hostsEntriesFromHostAliases is upstream's section of hostAliases: a blank
// line, its comment, and one line per alias with all its hostnames.
func hostsEntriesFromHostAliases(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

package kubeadm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The paths kubeadm v1.37.2 uses on a node (cmd/kubeadm/app/constants,
// apis/kubeadm/v1beta4/defaults.go) and the drop-in reads.
const (
	kubeletDir          = "/var/lib/kubelet"                       // KubeletRunDirectory
	bootstrapKubeconfig = "/etc/kubernetes/bootstrap-kubelet.conf" // KubeletBootstrapKubeConfigFileName
	caCert              = "/etc/kubernetes/pki/ca.crt"             // CertificatesDir + CACertName
	manifestsDir        = "/etc/kubernetes/manifests"              // DefaultManifestsDir
	defaultsFile        = "/etc/default/kubelet"                   // the administrator's KUBELET_EXTRA_ARGS
)

// joinFiles is what "kubeadm join" learns and decides for a worker node.
type joinFiles struct {
	nodeName string // --node-name, not the host name: kubeadm passes --hostname-override
	server   string // the cluster-info ConfigMap's server
	ca       []byte // the cluster CA, from discovery
	token    string // the bootstrap token (--token / discovery.tlsBootstrapToken)
	// criSocket is nodeRegistration.criSocket, written to
	// instance-config.yaml.
	criSocket string
	// clusterKubelet is the KubeletConfiguration the cluster was
	// initialized with (a document in "kubeadm init --config"), which
	// "kubeadm init" uploads to the kubelet-config ConfigMap and "kubeadm
	// join" downloads: kubeadm's Default fills what it leaves unset.
	clusterKubelet kubeletconfigv1beta1.KubeletConfiguration
	// patch is a kubeletconfiguration patch in "kubeadm join --patches"
	// (strategic merge, YAML), applied over the downloaded configuration.
	patch string
	// extraArgs is KUBELET_EXTRA_ARGS in /etc/default/kubelet; "" writes
	// no file.
	extraArgs string
}

// write writes the files under root (a directory standing for /), as
// runKubeletStartJoinPhase (cmd/kubeadm/app/cmd/phases/join/kubelet.go)
// writes them, and the administrator's /etc/default/kubelet. The node
// paths in config.yaml are rewritten to below root.
func (j joinFiles) write(root string) error {
	host := func(p string) string { return root + p }
	// bootstrap-kubelet.conf: kubeconfigutil.CreateWithToken(server,
	// "kubernetes", "tls-bootstrap-token-user", ca, token), discovery.go.
	const cluster, user = "kubernetes", "tls-bootstrap-token-user"
	ctx := user + "@" + cluster
	kc := &clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{cluster: {Server: j.server, CertificateAuthorityData: j.ca}},
		Contexts:       map[string]*clientcmdapi.Context{ctx: {Cluster: cluster, AuthInfo: user}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: {Token: j.token}},
		CurrentContext: ctx,
	}
	if err := os.MkdirAll(filepath.Dir(host(bootstrapKubeconfig)), 0o755); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*kc, host(bootstrapKubeconfig)); err != nil {
		return err
	}
	// The CA, from the bootstrap kubeconfig's cluster (certutil.WriteCert).
	if err := writeFile(host(caCert), j.ca, 0o644); err != nil {
		return err
	}
	// instance-config.yaml: WriteInstanceConfigToDisk (phases/kubelet/config.go).
	instance := fmt.Sprintf("containerRuntimeEndpoint: %q\n", j.criSocket)
	if err := writeFile(host(kubeletDir+"/instance-config.yaml"), []byte(instance), 0o644); err != nil {
		return err
	}
	// config.yaml: WriteConfigToDisk: the cluster's configuration (with
	// kubeadm's defaults, componentconfigs/kubelet.go Default) marshalled,
	// the --patches applied, then instance-config.yaml as a patch.
	cfg, err := yaml.Marshal(kubeadmDefault(j.clusterKubelet))
	if err != nil {
		return err
	}
	for _, p := range []string{j.patch, instance} {
		if p == "" {
			continue
		}
		if cfg, err = strategicPatch(cfg, p); err != nil {
			return err
		}
	}
	cfg = []byte(strings.ReplaceAll(string(cfg), " /etc/kubernetes/", " "+root+"/etc/kubernetes/"))
	if err := writeFile(host(kubeletDir+"/config.yaml"), cfg, 0o644); err != nil {
		return err
	}
	// kubeadm-flags.env: WriteKubeletDynamicEnvFile (phases/kubelet/flags.go):
	// a worker has no taints by default, and its node name is not the host
	// name, so the one flag is --hostname-override.
	flags := fmt.Sprintf("%s=%q\n", "KUBELET_KUBEADM_ARGS", "--hostname-override="+j.nodeName)
	if err := writeFile(host(kubeletDir+"/kubeadm-flags.env"), []byte(flags), 0o644); err != nil {
		return err
	}
	if j.extraArgs != "" {
		extra := fmt.Sprintf("KUBELET_EXTRA_ARGS=%s\n", j.extraArgs)
		if err := writeFile(host(defaultsFile), []byte(extra), 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(host(manifestsDir), 0o755)
}

// kubeadmDefault is kubeadm's kubeletConfig.Default for the default
// ClusterConfiguration (serviceSubnet 10.96.0.0/12, dnsDomain
// cluster.local, certificatesDir /etc/kubernetes/pki), then Mutate (no
// systemd-resolved here: resolvConf stays unset), with the type meta its
// codec writes.
func kubeadmDefault(c kubeletconfigv1beta1.KubeletConfiguration) *kubeletconfigv1beta1.KubeletConfiguration {
	c.APIVersion, c.Kind = "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"
	if c.FeatureGates == nil {
		c.FeatureGates = map[string]bool{}
	}
	if c.StaticPodPath == "" {
		c.StaticPodPath = manifestsDir
	}
	if c.ClusterDNS == nil {
		c.ClusterDNS = []string{"10.96.0.10"}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.Authentication.X509.ClientCAFile == "" {
		c.Authentication.X509.ClientCAFile = caCert
	}
	if c.Authentication.Anonymous.Enabled == nil {
		c.Authentication.Anonymous.Enabled = ptr.To(false)
	}
	if c.Authorization.Mode == "" {
		c.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeWebhook
	}
	if c.Authentication.Webhook.Enabled == nil {
		c.Authentication.Webhook.Enabled = ptr.To(true)
	}
	if c.HealthzBindAddress == "" {
		c.HealthzBindAddress = "127.0.0.1"
	}
	if c.HealthzPort == nil {
		c.HealthzPort = ptr.To[int32](10248)
	}
	c.RotateCertificates = true
	if c.CgroupDriver == "" {
		c.CgroupDriver = "systemd"
	}
	return &c
}

// strategicPatch applies a YAML strategic merge patch to a YAML
// KubeletConfiguration, as kubeadm's patch manager, and gives YAML back.
func strategicPatch(doc []byte, patch string) ([]byte, error) {
	docJSON, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	patchJSON, err := yaml.YAMLToJSON([]byte(patch))
	if err != nil {
		return nil, err
	}
	out, err := strategicpatch.StrategicMergePatch(docJSON, patchJSON, kubeletconfigv1beta1.KubeletConfiguration{})
	if err != nil {
		return nil, fmt.Errorf("patch %q: %w", patch, err)
	}
	return yaml.JSONToYAML(out)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}

// rooted rewrites the node paths in args (values of --flag=/path, and
// /path words) to below root, for the paths kubeadm and the drop-in use.
func rooted(root string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, prefix := range []string{"/etc/kubernetes/", "/var/lib/kubelet", "/etc/default/"} {
			if flag, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(value, prefix) {
				a = flag + "=" + root + value
				break
			}
			if strings.HasPrefix(a, prefix) {
				a = root + a
				break
			}
		}
		out[i] = a
	}
	return out
}

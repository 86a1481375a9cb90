// Package config turns actorlet's command line, KubeletConfiguration file and
// drop-in directory into one validated kubelet configuration, with the upstream
// kubelet's defaults, precedence rules and error behaviour.
package config

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/config/features"
)

const (
	defaultRootDir = "/var/lib/kubelet"
	defaultCertDir = "/var/lib/kubelet/pki"

	description = `actorlet is a Kubernetes node agent: it runs the pods assigned to its node, from
the API server (--kubeconfig), from static manifests (--pod-manifest-path) or from an
HTTP endpoint (--manifest-url), through a CRI container runtime, and reports node
and pod status, as the kubelet does. It accepts the kubelet's command line and
KubeletConfiguration file (--config, --config-dir); see docs/configuration.md.`
)

// Options are command-line-only settings (no KubeletConfiguration field).
type Options struct {
	ConfigFile string
	ConfigDir  string
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig: the credentials with
	// which the node asks for its client certificate when the --kubeconfig
	// file is missing or its certificate unusable (TLS bootstrap).
	BootstrapKubeconfig string
	CertDir             string
	HostnameOverride    string
	NodeIP              string
	RootDir             string
	// PodInfraContainerImage is the kubelet's --pod-infra-container-image,
	// which upstream no longer has; kept, hidden, because older kubeadm
	// wrote it into kubeadm-flags.env.
	PodInfraContainerImage string
	NodeLabels             map[string]string
	DumpConfig             bool
	ShowVersion            bool
	ShowHelp               bool
	DebugFaultInjection    bool
	// SeccompDefault is upstream's --seccomp-default, a command-line-only
	// flag that upstream ORs with the configuration's seccompDefault.
	SeccompDefault bool
	// ImageCredentialProviderConfig and ImageCredentialProviderBinDir are
	// upstream's --image-credential-provider-config and -bin-dir: the
	// credential provider plugins (internal/credprovider).
	ImageCredentialProviderConfig string
	ImageCredentialProviderBinDir string
	// DebugAddress is actorlet's own --debug-address: host:port of a plain
	// HTTP listener for the debugging handlers; empty turns it off.
	DebugAddress string
	// Accepted holds, by flag name, the values of the upstream
	// command-line-only flags given whose feature actorlet lacks
	// (acceptedFlags): accepted as upstream types them, reported once, and
	// otherwise unused.
	Accepted map[string]string
}

// CommandLine is the parsed command line.
type CommandLine struct {
	Options Options
	// Args are the arguments as given; Load re-parses them over the loaded
	// configuration so that explicit flags win over files.
	Args []string
	// Flags is the parsed flag set; Flags.Changed tells which flags were given.
	Flags *pflag.FlagSet
	// flagConfig is the legacy flag defaults with the flags applied: the
	// configuration when neither --config nor --config-dir is given.
	flagConfig *kubeletconfigv1beta1.KubeletConfiguration
}

// UsageError is a command line that cannot be parsed. Usage is the text to
// print after the error.
type UsageError struct {
	Err   string
	Usage string
}

func (e *UsageError) Error() string { return e.Err }

// configFlagDeprecated is upstream's deprecation of every flag that sets a
// KubeletConfiguration field (cmd/kubelet/app/options AddKubeletConfigFlags),
// shown in --help and printed when such a flag is used.
const configFlagDeprecated = "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information."

// configFlag binds a flag to the KubeletConfiguration field at path field.
type configFlag struct {
	name, shorthand, field, usage string
	// noOptDefVal makes the flag usable without a value, as for booleans.
	noOptDefVal string
	// notDeprecated are the few configuration flags upstream keeps
	// undeprecated; every other one carries configFlagDeprecated.
	notDeprecated bool
	value         func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value
}

// configFlags are the kubelet's flags for KubeletConfiguration fields, with
// upstream's names, types and meaning. Each sets its field, so the precedence
// of flags over files covers it; whether actorlet acts on the field is
// Implemented's to say.
var configFlags = []configFlag{
	{name: "pod-manifest-path", field: "staticPodPath", usage: "Path to the directory containing static pod files to run, or the path to a single static pod file. Files starting with dots will be ignored.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.StaticPodPath} }},
	{name: "manifest-url", field: "staticPodURL", usage: "URL for accessing additional Pod specifications to run",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.StaticPodURL} }},
	{name: "file-check-frequency", field: "fileCheckFrequency", usage: "Duration between checking config files for new data",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.FileCheckFrequency}
		}},
	{name: "http-check-frequency", field: "httpCheckFrequency", usage: "Duration between checking http for new data",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.HTTPCheckFrequency}
		}},
	{name: "sync-frequency", field: "syncFrequency", usage: "Max period between synchronizing running containers and config",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return durationValue{&c.SyncFrequency} }},
	{name: "address", field: "address", usage: "The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return ipValue{&c.Address} }},
	{name: "port", field: "port", usage: "The port for the Kubelet to serve on.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.Port} }},
	{name: "read-only-port", field: "readOnlyPort", usage: "The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable)",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.ReadOnlyPort} }},
	{name: "healthz-bind-address", field: "healthzBindAddress", usage: "The IP address for the healthz server to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return ipValue{&c.HealthzBindAddress} }},
	{name: "healthz-port", field: "healthzPort", usage: "The port of the localhost healthz endpoint (set to 0 to disable)",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32PtrValue{&c.HealthzPort} }},
	{name: "container-runtime-endpoint", field: "containerRuntimeEndpoint", usage: "The endpoint of container runtime service. Unix Domain Sockets are supported on Linux. Example: 'unix:///path/to/runtime.sock'",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.ContainerRuntimeEndpoint}
		}},
	{name: "image-service-endpoint", field: "imageServiceEndpoint", usage: "The endpoint of container image service. If not specified, it will be the same with --container-runtime-endpoint by default.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.ImageServiceEndpoint}
		}},
	{name: "anonymous-auth", field: "authentication.anonymous.enabled", noOptDefVal: "true", usage: "Enables anonymous requests to the Kubelet server. Requests that are not rejected by another authentication method are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.Authentication.Anonymous.Enabled}
		}},
	{name: "authentication-token-webhook", field: "authentication.webhook.enabled", noOptDefVal: "true", usage: "Use the TokenReview API to determine authentication for bearer tokens.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.Authentication.Webhook.Enabled}
		}},
	{name: "client-ca-file", field: "authentication.x509.clientCAFile", usage: "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.Authentication.X509.ClientCAFile}
		}},
	{name: "authorization-mode", field: "authorization.mode", usage: "Authorization mode for Kubelet server. Valid options are AlwaysAllow or Webhook. Webhook mode uses the SubjectAccessReview API to determine authorization.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{(*string)(&c.Authorization.Mode)}
		}},
	{name: "tls-cert-file", field: "tlsCertFile", usage: "File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated after server cert). If --tls-cert-file and --tls-private-key-file are not provided, a self-signed certificate and key are generated for the public address and saved to the directory passed to --cert-dir.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.TLSCertFile} }},
	{name: "tls-private-key-file", field: "tlsPrivateKeyFile", usage: "File containing x509 private key matching --tls-cert-file.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.TLSPrivateKeyFile}
		}},
	{name: "event-qps", field: "eventRecordQPS", usage: "QPS to limit event creations. The number must be >= 0. If 0 there is no limit enforced.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32PtrValue{&c.EventRecordQPS}
		}},
	{name: "event-burst", field: "eventBurst", usage: "Maximum size of a bursty event records, temporarily allows event records to burst to this number, while still not exceeding event-qps. The number must be >= 0.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.EventBurst} }},
	{name: "oom-score-adj", field: "oomScoreAdj", usage: "The oom-score-adj value for kubelet process. Values must be within the range [-1000, 1000]",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32PtrValue{&c.OOMScoreAdj} }},
	{name: "cluster-domain", field: "clusterDomain", usage: "Domain for this cluster. If set, kubelet will configure all containers to search this domain in addition to the host's search domains",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.ClusterDomain} }},
	{name: "cluster-dns", field: "clusterDNS", usage: "Comma-separated list of DNS server IP address. This value is used for containers DNS server in case of Pods with \"dnsPolicy=ClusterFirst\".",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &stringSliceValue{p: &c.ClusterDNS}
		}},
	{name: "streaming-connection-idle-timeout", field: "streamingConnectionIdleTimeout", usage: "Maximum time a streaming connection can be idle before the connection is automatically closed. 0 indicates no timeout. Example: '5m'.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.StreamingConnectionIdleTimeout}
		}},
	{name: "node-status-update-frequency", field: "nodeStatusUpdateFrequency", usage: "Specifies how often kubelet posts node status to master.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.NodeStatusUpdateFrequency}
		}},
	{name: "minimum-image-ttl-duration", field: "imageMinimumGCAge", usage: "Minimum age for an unused image before it is garbage collected. Examples: '300ms', '10s' or '2h45m'.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.ImageMinimumGCAge}
		}},
	{name: "image-gc-high-threshold", field: "imageGCHighThresholdPercent", usage: "The percent of disk usage after which image garbage collection is always run. Values must be within the range [0, 100], To disable image garbage collection, set to 100.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32PtrValue{&c.ImageGCHighThresholdPercent}
		}},
	{name: "image-gc-low-threshold", field: "imageGCLowThresholdPercent", usage: "The percent of disk usage before which image garbage collection is never run. Lowest disk usage to garbage collect to. Values must be within the range [0, 100] and must be less than that of --image-gc-high-threshold.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32PtrValue{&c.ImageGCLowThresholdPercent}
		}},
	{name: "volume-stats-agg-period", field: "volumeStatsAggPeriod", usage: "Specifies interval for kubelet to calculate and cache the volume disk usage for all pods and volumes. To disable volume calculations, set to a negative number.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.VolumeStatsAggPeriod}
		}},
	{name: "feature-gates", field: "featureGates", usage: "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n" + strings.Join(features.New().KnownFeatures(), "\n"),
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &featureGatesValue{p: &c.FeatureGates}
		}},
	{name: "provider-id", field: "providerID", notDeprecated: true, usage: "Unique identifier for identifying the node in a machine database, i.e cloudprovider",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.ProviderID} }},
	{name: "cgroup-driver", field: "cgroupDriver", usage: "Driver that the kubelet uses to manipulate cgroups on the host. Possible values: 'cgroupfs', 'systemd'",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.CgroupDriver} }},
	{name: "cgroup-root", field: "cgroupRoot", usage: "Optional root cgroup to use for pods. This is handled by the container runtime on a best effort basis. Default: '', which means use the container runtime default.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.CgroupRoot} }},
	{name: "runtime-request-timeout", field: "runtimeRequestTimeout", usage: "Timeout of all runtime requests except long running request - pull, logs, exec and attach. When timeout exceeded, kubelet will cancel the request, throw out an error and retry later.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.RuntimeRequestTimeout}
		}},
	{name: "hairpin-mode", field: "hairpinMode", usage: "How should the kubelet setup hairpin NAT. Valid values are \"promiscuous-bridge\", \"hairpin-veth\" and \"none\".",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.HairpinMode} }},
	{name: "max-pods", field: "maxPods", usage: "Number of Pods that can run on this Kubelet.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.MaxPods} }},
	{name: "resolv-conf", field: "resolvConf", usage: "Resolver configuration file used as the basis for the container DNS resolution configuration.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringPtrValue{&c.ResolverConfig}
		}},
	{name: "container-log-max-size", field: "containerLogMaxSize", usage: "Set the maximum size (e.g. 10Mi) of container log file before it is rotated.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.ContainerLogMaxSize}
		}},
	{name: "container-log-max-files", field: "containerLogMaxFiles", usage: "Set the maximum number of container log files that can be present for a container. The number must be >= 2.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32PtrValue{&c.ContainerLogMaxFiles}
		}},
	{name: "node-status-max-images", field: "nodeStatusMaxImages", usage: "The maximum number of images to report in Node.Status.Images. If -1 is specified, no cap will be applied.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32PtrValue{&c.NodeStatusMaxImages}
		}},
	{name: "max-open-files", field: "maxOpenFiles", usage: "Number of files that can be opened by Kubelet process.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int64Value{&c.MaxOpenFiles} }},
	{name: "kube-api-qps", field: "kubeAPIQPS", usage: "QPS to use while talking with kubernetes apiserver. The number must be >= 0.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32PtrValue{&c.KubeAPIQPS} }},
	{name: "kube-api-burst", field: "kubeAPIBurst", usage: "Burst to use while talking with kubernetes apiserver. The number must be >= 0.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.KubeAPIBurst} }},
	{name: "serialize-image-pulls", field: "serializeImagePulls", noOptDefVal: "true", usage: "Pull images one at a time.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.SerializeImagePulls}
		}},
	{name: "eviction-hard", field: "evictionHard", usage: "A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.EvictionHard, sep: "<"}
		}},
	{name: "pods-per-core", field: "podsPerCore", usage: "Number of Pods per core that can run on this Kubelet. The total number of Pods on this Kubelet cannot exceed max-pods. A value of 0 disables this limit.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.PodsPerCore} }},
	{name: "system-reserved", field: "systemReserved", usage: "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components. [default=none]",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.SystemReserved, sep: "="}
		}},
	{name: "kube-reserved", field: "kubeReserved", usage: "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components. [default=none]",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.KubeReserved, sep: "="}
		}},
	{name: "fail-swap-on", field: "failSwapOn", noOptDefVal: "true", usage: "Makes the Kubelet fail to start if swap is enabled on the node.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolPtrValue{&c.FailSwapOn} }},
	{name: "register-node", field: "registerNode", noOptDefVal: "true", usage: "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the Kubelet won't have an apiserver to register with.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolPtrValue{&c.RegisterNode} }},
	{name: "register-with-taints", field: "registerWithTaints", usage: "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"). No-op if register-node is false.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return taintsValue{&c.RegisterWithTaints}
		}},
	{name: "rotate-certificates", field: "rotateCertificates", noOptDefVal: "true", usage: "Auto rotate the kubelet client certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.RotateCertificates}
		}},
	{name: "rotate-server-certificates", field: "serverTLSBootstrap", noOptDefVal: "true", usage: "Auto-request and rotate the kubelet serving certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches. Requires the RotateKubeletServerCertificate feature gate to be enabled, and approval of the submitted CertificateSigningRequest objects.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.ServerTLSBootstrap}
		}},
	{name: "logging-format", field: "logging.format", usage: "Sets the log format. Permitted formats: \"json\", \"text\".",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.Logging.Format} }},
	{name: "v", shorthand: "v", field: "logging.verbosity", notDeprecated: true, usage: "number for the log level verbosity",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return verbosityValue{&c.Logging.Verbosity}
		}},
	// The flags below were added for issue #20 (every upstream flag is
	// accepted); the usage texts are upstream's.
	{name: "allowed-unsafe-sysctls", field: "allowedUnsafeSysctls", usage: "Comma-separated whitelist of unsafe sysctls or unsafe sysctl patterns (ending in *). Use these at your own risk.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &stringSliceValue{p: &c.AllowedUnsafeSysctls}
		}},
	{name: "authentication-token-webhook-cache-ttl", field: "authentication.webhook.cacheTTL", usage: "The duration to cache responses from the webhook token authenticator.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.Authentication.Webhook.CacheTTL}
		}},
	{name: "authorization-webhook-cache-authorized-ttl", field: "authorization.webhook.cacheAuthorizedTTL", usage: "The duration to cache 'authorized' responses from the webhook authorizer.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.Authorization.Webhook.CacheAuthorizedTTL}
		}},
	{name: "authorization-webhook-cache-unauthorized-ttl", field: "authorization.webhook.cacheUnauthorizedTTL", usage: "The duration to cache 'unauthorized' responses from the webhook authorizer.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.Authorization.Webhook.CacheUnauthorizedTTL}
		}},
	{name: "cgroups-per-qos", field: "cgroupsPerQOS", noOptDefVal: "true", usage: "Enable creation of QoS cgroup hierarchy, if true top level QoS and pod cgroups are created.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolPtrValue{&c.CgroupsPerQOS} }},
	{name: "contention-profiling", field: "enableContentionProfiling", noOptDefVal: "true", usage: "Enable block profiling, if profiling is enabled",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.EnableContentionProfiling}
		}},
	{name: "cpu-cfs-quota", field: "cpuCFSQuota", noOptDefVal: "true", usage: "Enable CPU CFS quota enforcement for containers that specify CPU limits",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolPtrValue{&c.CPUCFSQuota} }},
	{name: "cpu-cfs-quota-period", field: "cpuCFSQuotaPeriod", usage: "Sets CPU CFS quota period value (cpu.cfs_period_us). Defaults to Linux Kernel default. Requires the CustomCPUCFSQuotaPeriod feature gate to set non-default values.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationPtrValue{&c.CPUCFSQuotaPeriod}
		}},
	{name: "cpu-manager-policy", field: "cpuManagerPolicy", usage: "CPU Manager policy to use. Possible values: 'none', 'static'.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.CPUManagerPolicy}
		}},
	{name: "cpu-manager-policy-options", field: "cpuManagerPolicyOptions", usage: "A set of key=value CPU Manager policy options to use, to fine tune their behaviour. If not supplied, keep the default behaviour.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return cliflag.NewMapStringStringNoSplit(&c.CPUManagerPolicyOptions)
		}},
	{name: "cpu-manager-reconcile-period", field: "cpuManagerReconcilePeriod", usage: "<Warning: Alpha feature> CPU Manager reconciliation period. Examples: '10s', or '1m'. If not supplied, defaults to 'NodeStatusUpdateFrequency'",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.CPUManagerReconcilePeriod}
		}},
	{name: "enable-controller-attach-detach", field: "enableControllerAttachDetach", noOptDefVal: "true", usage: "Enables the Attach/Detach controller to manage attachment/detachment of volumes scheduled to this node, and disables kubelet from executing any attach/detach operations",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.EnableControllerAttachDetach}
		}},
	{name: "enable-debugging-handlers", field: "enableDebuggingHandlers", noOptDefVal: "true", usage: "Enables server endpoints for log collection and local running of containers and commands",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.EnableDebuggingHandlers}
		}},
	{name: "enable-server", field: "enableServer", noOptDefVal: "true", usage: "Enable the Kubelet's server",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolPtrValue{&c.EnableServer} }},
	{name: "enforce-node-allocatable", field: "enforceNodeAllocatable", usage: "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet. Acceptable options are 'none', 'pods', 'system-reserved', 'system-reserved-compressible', 'kube-reserved' and 'kube-reserved-compressible'. If any of the latter four options are specified, '--system-reserved-cgroup' and '--kube-reserved-cgroup' must also be set, respectively. If 'none' is specified, no additional options should be set. See https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/ for more details.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &stringSliceValue{p: &c.EnforceNodeAllocatable}
		}},
	{name: "eviction-max-pod-grace-period", field: "evictionMaxPodGracePeriod", usage: "Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met.  If negative, defer to pod specified value.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32Value{&c.EvictionMaxPodGracePeriod}
		}},
	{name: "eviction-minimum-reclaim", field: "evictionMinimumReclaim", usage: "A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource the kubelet will reclaim when performing a pod eviction if that resource is under pressure.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.EvictionMinimumReclaim, sep: "="}
		}},
	{name: "eviction-pressure-transition-period", field: "evictionPressureTransitionPeriod", usage: "Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.EvictionPressureTransitionPeriod}
		}},
	{name: "eviction-soft", field: "evictionSoft", usage: "A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.EvictionSoft, sep: "<"}
		}},
	{name: "eviction-soft-grace-period", field: "evictionSoftGracePeriod", usage: "A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.EvictionSoftGracePeriod, sep: "="}
		}},
	{name: "fail-cgroupv1", field: "failCgroupV1", noOptDefVal: "true", notDeprecated: true, usage: "Prevent the kubelet from starting on the host using cgroup v1.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolPtrValue{&c.FailCgroupV1} }},
	{name: "kernel-memcg-notification", field: "kernelMemcgNotification", noOptDefVal: "true", usage: "If enabled, the kubelet will integrate with the kernel memcg notification to determine if memory eviction thresholds are crossed rather than polling.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.KernelMemcgNotification}
		}},
	{name: "kube-api-content-type", field: "contentType", usage: "Content type of requests sent to apiserver.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.ContentType} }},
	{name: "kube-reserved-cgroup", field: "kubeReservedCgroup", usage: "Absolute name of the top level cgroup that is used to manage kubernetes components for which compute resources were reserved via '--kube-reserved' flag. Ex. '/kube-reserved'. [default='']",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.KubeReservedCgroup}
		}},
	{name: "kubelet-cgroups", field: "kubeletCgroups", usage: "Optional absolute name of cgroups to create and run the Kubelet in.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.KubeletCgroups} }},
	{name: "local-storage-capacity-isolation", field: "localStorageCapacityIsolation", noOptDefVal: "true", usage: "If true, local ephemeral storage isolation is enabled. Otherwise, local storage isolation feature will be disabled",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.LocalStorageCapacityIsolation}
		}},
	{name: "log-flush-frequency", field: "logging.flushFrequency", notDeprecated: true, usage: "Maximum number of seconds between log flushes",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return durationValue{&c.Logging.FlushFrequency.Duration}
		}},
	{name: "log-json-info-buffer-size", field: "logging.options.json.infoBufferSize", usage: "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &c.Logging.Options.JSON.InfoBufferSize
		}},
	{name: "log-json-split-stream", field: "logging.options.json.splitStream", noOptDefVal: "true", usage: "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.Logging.Options.JSON.SplitStream}
		}},
	{name: "log-text-info-buffer-size", field: "logging.options.text.infoBufferSize", usage: "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &c.Logging.Options.Text.InfoBufferSize
		}},
	{name: "log-text-split-stream", field: "logging.options.text.splitStream", noOptDefVal: "true", usage: "[Alpha] In text format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.Logging.Options.Text.SplitStream}
		}},
	{name: "make-iptables-util-chains", field: "makeIPTablesUtilChains", noOptDefVal: "true", usage: "If true, kubelet will ensure iptables utility rules are present on host.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolPtrValue{&c.MakeIPTablesUtilChains}
		}},
	{name: "manifest-url-header", field: "staticPodURLHeader", usage: "Comma-separated list of HTTP headers to use when accessing the url provided to --manifest-url. Multiple headers with the same name will be added in the same order provided. This flag can be repeatedly invoked. For example: --manifest-url-header 'a:hello,b:again,c:world' --manifest-url-header 'b:beautiful'",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return cliflag.NewColonSeparatedMultimapStringString(&c.StaticPodURLHeader)
		}},
	{name: "memory-manager-policy", field: "memoryManagerPolicy", usage: "Memory Manager policy to use. Possible values: 'None', 'Static'.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.MemoryManagerPolicy}
		}},
	{name: "pod-cidr", field: "podCIDR", usage: "The CIDR to use for pod IP addresses, only used in standalone mode.  In cluster mode, this is obtained from the master. For IPv6, the maximum number of IP's allocated is 65536",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.PodCIDR} }},
	{name: "pod-max-pids", field: "podPidsLimit", usage: "Set the maximum number of processes per pod.  If -1, the kubelet defaults to the node allocatable pid capacity.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int64PtrValue{&c.PodPidsLimit} }},
	{name: "protect-kernel-defaults", field: "protectKernelDefaults", noOptDefVal: "true", usage: "Default kubelet behaviour for kernel tuning. If set, kubelet errors if any of kernel tunables is different than kubelet defaults.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return boolValue{&c.ProtectKernelDefaults}
		}},
	{name: "qos-reserved", field: "qosReserved", usage: "<Warning: Alpha feature> A set of ResourceName=Percentage (e.g. memory=50%) pairs that describe how pod resource requests are reserved at the QoS level. Currently only memory is supported. Requires the QOSReserved feature gate to be enabled.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.QOSReserved, sep: "="}
		}},
	{name: "registry-burst", field: "registryBurst", usage: "Maximum size of a bursty pulls, temporarily allows pulls to burst to this number, while still not exceeding registry-qps. Only used if --registry-qps > 0",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return int32Value{&c.RegistryBurst} }},
	{name: "registry-qps", field: "registryPullQPS", usage: "If > 0, limit registry pull QPS to this value.  If 0, unlimited.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return int32PtrValue{&c.RegistryPullQPS}
		}},
	{name: "reserved-cpus", field: "reservedSystemCPUs", usage: "A comma-separated list of CPUs or CPU ranges that are reserved for system and kubernetes usage. This specific list will supersede cpu counts in --system-reserved and --kube-reserved.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.ReservedSystemCPUs}
		}},
	{name: "reserved-memory", field: "reservedMemory", usage: "A comma separated list of memory reservations for NUMA nodes. (e.g. --reserved-memory 0:memory=1Gi,hugepages-1M=2Gi --reserved-memory 1:memory=2Gi). The total sum for each memory type should be equal to the sum of kube-reserved, system-reserved and eviction-threshold. See https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/#reserved-memory-flag for more details.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &reservedMemoryValue{p: &c.ReservedMemory}
		}},
	{name: "runonce", field: "runOnce", noOptDefVal: "true", usage: "If true, exit after spawning pods from static pod files or remote urls. Exclusive with --enable-server",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return boolValue{&c.RunOnce} }},
	{name: "system-cgroups", field: "systemCgroups", usage: "Optional absolute name of cgroups in which to place all non-kernel processes that are not already inside a cgroup under '/'. Empty for no container. Rolling back the flag requires a reboot.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.SystemCgroups} }},
	{name: "system-reserved-cgroup", field: "systemReservedCgroup", usage: "Absolute name of the top level cgroup that is used to manage non-kubernetes components for which compute resources were reserved via '--system-reserved' flag. Ex. '/system-reserved'. [default='']",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.SystemReservedCgroup}
		}},
	{name: "tls-cipher-suites", field: "tlsCipherSuites", usage: "Comma-separated list of cipher suites for the server. If omitted, the default Go cipher suites will be used. \nPreferred values: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256. \nInsecure values: TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, TLS_ECDHE_ECDSA_WITH_RC4_128_SHA, TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, TLS_ECDHE_RSA_WITH_RC4_128_SHA, TLS_RSA_WITH_3DES_EDE_CBC_SHA, TLS_RSA_WITH_AES_128_CBC_SHA, TLS_RSA_WITH_AES_128_CBC_SHA256, TLS_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_256_CBC_SHA, TLS_RSA_WITH_AES_256_GCM_SHA384, TLS_RSA_WITH_RC4_128_SHA.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &stringSliceValue{p: &c.TLSCipherSuites}
		}},
	{name: "tls-min-version", field: "tlsMinVersion", usage: "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.TLSMinVersion} }},
	{name: "topology-manager-policy", field: "topologyManagerPolicy", usage: "Topology Manager policy to use. Possible values: 'none', 'best-effort', 'restricted', 'single-numa-node'.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.TopologyManagerPolicy}
		}},
	{name: "topology-manager-policy-options", field: "topologyManagerPolicyOptions", usage: "A set of key=value Topology Manager policy options to use, to fine tune their behaviour. If not supplied, keep the default behaviour.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return &mapValue{p: &c.TopologyManagerPolicyOptions, sep: "="}
		}},
	{name: "topology-manager-scope", field: "topologyManagerScope", usage: "Scope to which topology hints applied. Topology Manager collects hints from Hint Providers and applies them to defined scope to ensure the pod admission. Possible values: 'container', 'pod'.",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return stringValue{&c.TopologyManagerScope}
		}},
	{name: "vmodule", field: "logging.vmodule", notDeprecated: true, usage: "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value {
			return logsapi.VModuleConfigurationPflag(&c.Logging.VModule)
		}},
	{name: "volume-plugin-dir", field: "volumePluginDir", usage: "The full path of the directory in which to search for additional third party volume plugins",
		value: func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value { return stringValue{&c.VolumePluginDir} }},
}

// addOptionFlags registers the command-line-only flags.
func addOptionFlags(fs *pflag.FlagSet, o *Options) {
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "The Kubelet will load its initial configuration from this file. The path may be absolute or relative; relative paths start at the Kubelet's current working directory. Omit this flag to use the built-in default configuration values. Command-line flags override configuration from this file.")
	fs.StringVar(&o.ConfigDir, "config-dir", o.ConfigDir, "Path to a directory containing drop-in configuration files that override settings from defaults and the --config file. Drop-in files must have a '.conf' suffix (e.g., '99-kubelet-address.conf') and are processed in lexical order. Only '.conf' files are loaded; all other files are ignored. All .conf files in the directory and its subdirectories are processed in lexical order.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting --kubeconfig enables standalone mode.")
	fs.StringVar(&o.BootstrapKubeconfig, "bootstrap-kubeconfig", o.BootstrapKubeconfig, "Path to a kubeconfig file that will be used to get client certificate for kubelet. If the file specified by --kubeconfig does not exist, the bootstrap kubeconfig is used to request a client certificate from the API server. On success, a kubeconfig file referencing the generated client certificate and key is written to the path specified by --kubeconfig. The client certificate and key file will be stored in the directory pointed by --cert-dir.")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.")
	fs.StringVar(&o.HostnameOverride, "hostname-override", o.HostnameOverride, "If non-empty, will use this string as identification instead of the actual hostname.")
	fs.StringVar(&o.NodeIP, "node-ip", o.NodeIP, "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, kubelet will use the node's default IPv4 address, if any, or its default IPv6 address if it has no IPv4 addresses.")
	fs.StringVar(&o.RootDir, "root-dir", o.RootDir, "Directory path for managing kubelet files (volume mounts,etc).")
	fs.StringVar(&o.PodInfraContainerImage, "pod-infra-container-image", o.PodInfraContainerImage, "Accepted for compatibility and ignored: the container runtime chooses the sandbox image.")
	// Upstream removed the flag; hidden as an unknown one would be, but
	// accepted, as kubeadm-flags.env files from older kubeadm carry it.
	_ = fs.MarkHidden("pod-infra-container-image")
	fs.Var(labelsValue{o.NodeLabels}, "node-labels", nodeLabelsUsage)
	fs.BoolVar(&o.DumpConfig, "dump-config", o.DumpConfig, "Print the effective configuration (defaults, --config, --config-dir and flags merged) as KubeletConfiguration YAML on stdout and exit.")
	fs.VarPF(&versionValue{show: &o.ShowVersion, accepted: o.Accepted}, "version", "", "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported version").NoOptDefVal = "true"
	fs.BoolVarP(&o.ShowHelp, "help", "h", o.ShowHelp, "help for actorlet")
	fs.BoolVar(&o.SeccompDefault, "seccomp-default", o.SeccompDefault, "Enable the use of `RuntimeDefault` as the default seccomp profile for all workloads.")
	fs.StringVar(&o.ImageCredentialProviderConfig, "image-credential-provider-config", o.ImageCredentialProviderConfig, "Path to a credential provider plugin config file (JSON/YAML/YML) or a directory of such files (merged in lexicographical order; non-recursive search).")
	fs.StringVar(&o.ImageCredentialProviderBinDir, "image-credential-provider-bin-dir", o.ImageCredentialProviderBinDir, "The path to the directory where credential provider plugin binaries are located.")
	fs.BoolVar(&o.DebugFaultInjection, "debug-fault-injection", o.DebugFaultInjection, "actorlet only: enables POST /debug/inject/panic on the kubelet API (behind authentication and authorization) and on --debug-address; never for production.")
	fs.StringVar(&o.DebugAddress, "debug-address", o.DebugAddress, "actorlet only, for development: host:port on which to serve the actor dashboard, /debug/actors.json, pprof and fault injection in plain HTTP without authentication (e.g. 127.0.0.1:10249); empty (the default) serves them only on the kubelet API, behind authentication and authorization. Not part of KubeletConfiguration: --dump-config does not show it.")
}

// acceptedFlag is an upstream command-line-only flag (KubeletFlags, or a
// global one) for a feature actorlet does not have: accepted with upstream's
// type and default, kept in Options.Accepted, and reported as not implemented.
type acceptedFlag struct {
	name, typ, def, usage string
	// deprecated is upstream's MarkDeprecated message, if any.
	deprecated string
}

// acceptedFlags are upstream v1.37.2's command-line-only flags that actorlet
// accepts without acting on them; the usage texts are upstream's.
var acceptedFlags = []acceptedFlag{
	{name: "cloud-provider", typ: "string", usage: "The provider for cloud services. Set to empty string for running with no cloud provider. Set to 'external' for running with an external cloud provider."},
	{name: "exit-on-lock-contention", typ: "bool", def: "false", usage: "Whether kubelet should exit upon lock-file contention."},
	{name: "experimental-allocatable-ignore-eviction", typ: "bool", def: "false", deprecated: "will be removed in 1.25 or later.",
		usage: "When set to 'true', Hard Eviction Thresholds will be ignored while calculating Node Allocatable. See https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/ for more details. [default=false]"},
	{name: "experimental-mounter-path", typ: "string", deprecated: "will be removed in 1.25 or later. in favor of using CSI.", usage: "[Experimental] Path of mounter binary. Leave empty to use the default mount."},
	{name: "housekeeping-interval", typ: "duration", def: "10s", usage: "Interval between container housekeepings"},
	{name: "lock-file", typ: "string", usage: "<Warning: Alpha feature> The path to file for kubelet to use as a lock file."},
	{name: "maximum-dead-containers", typ: "int32", def: "-1", deprecated: "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.",
		usage: "Maximum number of old instances of containers to retain globally.  Each container takes up some disk space. To disable, set to a negative number."},
	{name: "maximum-dead-containers-per-container", typ: "int32", def: "1", deprecated: "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.",
		usage: "Maximum number of old instances to retain per container.  Each container takes up some disk space."},
	{name: "minimum-container-ttl-duration", typ: "duration", def: "0s", deprecated: "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.",
		usage: "Minimum age for a finished container before it is garbage collected.  Examples: '300ms', '10s' or '2h45m'"},
	{name: "runtime-cgroups", typ: "string", usage: "Optional absolute name of cgroups to create and run the runtime in."},
}

func addAcceptedFlags(fs *pflag.FlagSet, o *Options) {
	for _, f := range acceptedFlags {
		flag := fs.VarPF(&acceptedValue{name: f.name, typ: f.typ, text: f.def, into: o.Accepted}, f.name, "", f.usage)
		if f.typ == "bool" {
			flag.NoOptDefVal = "true"
		}
		// Deprecated but listed in --help, as upstream unhides them.
		flag.Deprecated = f.deprecated
	}
}

func addConfigFlags(fs *pflag.FlagSet, c *kubeletconfigv1beta1.KubeletConfiguration) {
	for _, f := range configFlags {
		flag := fs.VarPF(f.value(c), f.name, f.shorthand, f.usage)
		flag.NoOptDefVal = f.noOptDefVal
		if !f.notDeprecated {
			flag.Deprecated = configFlagDeprecated
		}
	}
}

// newFlagSet returns an empty flag set with upstream's name normalization, so
// that --pod_manifest_path is --pod-manifest-path.
func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("actorlet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// ParseCommandLine parses args (without argv[0]) over the legacy flag defaults.
func ParseCommandLine(args []string) (*CommandLine, error) {
	c := &CommandLine{
		Options: Options{
			RootDir:    defaultRootDir,
			CertDir:    defaultCertDir,
			NodeLabels: map[string]string{},
			Accepted:   map[string]string{},
		},
		Args:       args,
		Flags:      newFlagSet(),
		flagConfig: legacyDefaults(),
	}
	addOptionFlags(c.Flags, &c.Options)
	addAcceptedFlags(c.Flags, &c.Options)
	addConfigFlags(c.Flags, c.flagConfig)
	if err := c.Flags.Parse(args); err != nil {
		return nil, &UsageError{Err: err.Error(), Usage: c.usage()}
	}
	if rest := c.Flags.Args(); len(rest) > 0 {
		return nil, &UsageError{Err: fmt.Sprintf("unknown command %q", rest[0]), Usage: c.usage()}
	}
	if a := c.Options.DebugAddress; a != "" {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return nil, &UsageError{Err: fmt.Sprintf("invalid argument %q for \"--debug-address\" flag: want host:port, e.g. 127.0.0.1:10249", a), Usage: c.usage()}
		}
	}
	return c, nil
}

func (c *CommandLine) usage() string {
	return "Usage:\n  actorlet [flags]\n\nFlags:\n" + c.Flags.FlagUsages()
}

// Help is the full --help text.
func (c *CommandLine) Help() string {
	return description + "\n\n" + c.usage()
}

// FeatureGates returns the gates set by --feature-gates, the first of the two
// places upstream applies them (the second is the merged configuration).
func (c *CommandLine) FeatureGates() (*features.Gates, []string, error) {
	g := features.New()
	warnings, err := g.SetFromMap(c.flagConfig.FeatureGates)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to set feature gates from the command line: %w", err)
	}
	return g, warnings, nil
}

// applyFlagPrecedence re-parses the command line over a configuration loaded
// from files, as upstream's kubeletConfigFlagPrecedence does, so that every flag
// given explicitly wins. Command-line-only flags are bound to no-ops because
// some values accumulate and were already applied by the first parse.
func applyFlagPrecedence(cfg *kubeletconfigv1beta1.KubeletConfiguration, args []string) error {
	fs := newFlagSet()
	var throwaway Options
	throwaway.NodeLabels = map[string]string{}
	throwaway.Accepted = map[string]string{}
	addOptionFlags(fs, &throwaway)
	addAcceptedFlags(fs, &throwaway)
	fs.VisitAll(func(f *pflag.Flag) { f.Value = noopValue{typ: f.Value.Type()} })
	original := cfg.FeatureGates
	addConfigFlags(fs, cfg)
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The flag replaces the map on first use; gates set only in files survive.
	for k, v := range original {
		if _, ok := cfg.FeatureGates[k]; !ok {
			cfg.FeatureGates[k] = v
		}
	}
	return nil
}

// Warnings are what the command line itself calls for, as upstream says
// them: pflag's line for each deprecated flag used (once per flag, where
// upstream repeats it per use), then one line naming the flags given whose
// setting actorlet does not act on.
func (c *CommandLine) Warnings() []string {
	var warnings, ignored []string
	c.Flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed && f.Deprecated != "" {
			warnings = append(warnings, fmt.Sprintf("Flag --%s has been deprecated, %s", f.Name, f.Deprecated))
		}
	})
	for _, f := range configFlags {
		if c.Flags.Changed(f.name) && !IsImplemented(f.field) {
			ignored = append(ignored, fmt.Sprintf("--%s (%s)", f.name, f.field))
		}
	}
	for _, f := range acceptedFlags {
		if c.Flags.Changed(f.name) {
			ignored = append(ignored, "--"+f.name)
		}
	}
	if _, ok := c.Options.Accepted["version"]; ok {
		ignored = append(ignored, "--version (a reported version other than actorlet's)")
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		warnings = append(warnings, "accepted, not implemented: "+strings.Join(ignored, ", "))
	}
	return warnings
}

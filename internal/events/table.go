package events

// Event is one event upstream's kubelet v1.37.2 can emit.
type Event struct {
	// Name is the constant of this package holding the reason.
	Name   string
	Reason string
	// Object is the kind the event is about: Pod (or one of its
	// containers), Node, PersistentVolumeClaim, PersistentVolume.
	Object string
	Type   string // Normal or Warning
	// Message is upstream's message, as its format.
	Message string
	// Emitter is upstream's file, under k8s.io/kubernetes/pkg.
	Emitter string
	// NotEmitted, when set, says why actorlet does not emit it; else an
	// emitter of actorlet uses the constant Name.
	NotEmitted string
}

// Upstream is every event upstream's kubelet can emit, with a fixed
// reason; a pod refused at admission also gets a Warning event whose
// reason is the refusing handler's (podmanager), as upstream's rejectPod.
var Upstream = []Event{
	{"CreatedContainer", CreatedContainer, "Pod", "Normal", "Container created", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"StartedContainer", StartedContainer, "Pod", "Normal", "Container started", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"FailedToCreateContainer", FailedToCreateContainer, "Pod", "Warning", "Error: %v", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"FailedToStartContainer", FailedToStartContainer, "Pod", "Warning", "Error: %v", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"KillingContainer", KillingContainer, "Pod", "Normal", "Stopping container %s", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"PreemptContainer", PreemptContainer, "Pod", "Warning", "Preempted in order to admit critical pod", "kubelet/preemption/preemption.go", ""},
	{"BackOffStartContainer", BackOffStartContainer, "Pod", "Warning", "Back-off restarting failed container %s in pod %s", "kubelet/kuberuntime/kuberuntime_manager.go", ""},
	{"ExceededGracePeriod", ExceededGracePeriod, "Pod", "Warning", "Container runtime did not kill the pod within specified grace period.", "kubelet/pod_workers.go", ""},
	{"FailedToKillPod", FailedToKillPod, "Pod", "Warning", "error killing pod: %v", "kubelet/kubelet.go", ""},
	{"FailedToCreatePodContainer", FailedToCreatePodContainer, "Pod", "Warning", "unable to ensure pod container exists: %v", "kubelet/kubelet.go", ""},
	{"FailedToMakePodDataDirectories", FailedToMakePodDataDirectories, "Pod", "Warning", "error making pod data directories: %v", "kubelet/kubelet.go",
		"not yet: the volume-manager makes the pod's directories and reports a failure as FailedMount"},
	{"NetworkNotReady", NetworkNotReady, "Pod", "Warning", "network is not ready: %v", "kubelet/kubelet.go", ""},
	{"ResizeDeferred", ResizeDeferred, "Pod", "Warning", "%s", "kubelet/allocation/allocation_manager.go", ""},
	{"ResizeInfeasible", ResizeInfeasible, "Pod", "Warning", "%s", "kubelet/allocation/allocation_manager.go", ""},
	{"ResizeCompleted", ResizeCompleted, "Pod", "Normal", "%s", "kubelet/kubelet.go", ""},
	{"ResizeStarted", ResizeStarted, "Pod", "Normal", "%s", "kubelet/allocation/allocation_manager.go", ""},
	{"ResizeError", ResizeError, "Pod", "Warning", "%s", "kubelet/kubelet.go", ""},
	{"FailedNodeDeclaredFeaturesCheck", FailedNodeDeclaredFeaturesCheck, "Pod", "Warning", "Pod requires node features that are not available: %s", "kubelet/kubelet.go",
		"not yet: actorlet declares no node features (status.declaredFeatures), so it matches none against pods"},
	{"FailedToRetrieveImagePullSecret", FailedToRetrieveImagePullSecret, "Pod", "Warning", "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", "kubelet/kubelet.go", ""},
	{"DeadlineExceeded", DeadlineExceeded, "Pod", "Normal", "Pod was active on the node longer than the specified deadline", "kubelet/active_deadline.go", ""},
	{"HostIPsIPFamilyMismatch", HostIPsIPFamilyMismatch, "Pod", "Warning", "Kubelet detected an IPv%s node IP (%s), but the cloud provider selected an IPv%s node IP (%s); pass an explicit `--node-ip` to kubelet to fix this.", "kubelet/kubelet_pods.go",
		"not applicable: no cloud provider chooses actorlet's node IP, so the host IPs are the node IP's family"},
	{"DNSConfigForming", DNSConfigForming, "Pod", "Warning", "%s (resolver limits exceeded)", "kubelet/network/dns/dns.go", ""},
	{"PodCertificateDenied", PodCertificateDenied, "Pod", "Warning", "%s (the request's condition message)", "kubelet/podcertificate/podcertificatemanager.go",
		"not yet: a denied PodCertificateRequest shows as the projected volume's FailedMount"},
	{"PodCertificateFailed", PodCertificateFailed, "Pod", "Warning", "%s (the request's condition message)", "kubelet/podcertificate/podcertificatemanager.go",
		"not yet: a failed PodCertificateRequest shows as the projected volume's FailedMount"},
	{"CertificateOverdueForRefresh", CertificateOverdueForRefresh, "Pod", "Warning", "PodCertificate refresh overdue", "kubelet/podcertificate/podcertificatemanager.go",
		"not yet: the refresh is retried without an event"},
	{"CertificateExpired", CertificateExpired, "Pod", "Warning", "PodCertificate expired", "kubelet/podcertificate/podcertificatemanager.go",
		"not yet: the refresh is retried without an event"},

	{"PullingImage", PullingImage, "Pod", "Normal", "Pulling image %q", "kubelet/images/image_manager.go", ""},
	{"PulledImage", PulledImage, "Pod", "Normal", "Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.", "kubelet/images/image_manager.go", ""},
	{"FailedToPullImage", FailedToPullImage, "Pod", "Warning", "Failed to pull image %q: %v", "kubelet/images/image_manager.go", ""},
	{"FailedToInspectImage", FailedToInspectImage, "Pod", "Warning", "Failed to inspect image %q: %v", "kubelet/images/image_manager.go", ""},
	{"ErrImageNeverPullPolicy", ErrImageNeverPullPolicy, "Pod", "Warning", "Container image %q is not present with pull policy of Never", "kubelet/images/image_manager.go", ""},
	{"BackOffPullImage", BackOffPullImage, "Pod", "Normal", "Back-off pulling image %q", "kubelet/images/image_manager.go", ""},

	{"NodeReady", NodeReady, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeNotReady", NodeNotReady, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeSchedulable", NodeSchedulable, "Node", "Normal", NodeStatusMessage, "kubelet/kubelet_node_status.go", ""},
	{"NodeNotSchedulable", NodeNotSchedulable, "Node", "Normal", NodeStatusMessage, "kubelet/kubelet_node_status.go", ""},
	{"NodeHasSufficientMemory", NodeHasSufficientMemory, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeHasInsufficientMemory", NodeHasInsufficientMemory, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeHasNoDiskPressure", NodeHasNoDiskPressure, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeHasDiskPressure", NodeHasDiskPressure, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeHasSufficientPID", NodeHasSufficientPID, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"NodeHasInsufficientPID", NodeHasInsufficientPID, "Node", "Normal", NodeStatusMessage, "kubelet/nodestatus/setters.go", ""},
	{"StartingKubelet", StartingKubelet, "Node", "Normal", "Starting kubelet.", "kubelet/kubelet.go", ""},
	{"KubeletSetupFailed", KubeletSetupFailed, "Node", "Warning", "%s", "kubelet/kubelet.go",
		"not yet: a failed start-up step ends the process with one line naming the step, before the node's events are sent"},
	{"NodeRebooted", NodeRebooted, "Node", "Warning", "Node %s has been rebooted, boot id: %s", "kubelet/nodestatus/setters.go", ""},
	{"NodeShutdown", NodeShutdown, "Node", "Normal", "Shutdown manager detected shutdown event", "kubelet/nodeshutdown/nodeshutdown_manager_linux.go", ""},
	{"SystemOOM", SystemOOM, "Node", "Warning", "System OOM encountered, victim process: %s, pid: %d", "kubelet/oom/oom_watcher_linux.go", ""},
	{"ContainerGCFailed", ContainerGCFailed, "Node", "Warning", "%s", "kubelet/kubelet.go", ""},
	{"ImageGCFailed", ImageGCFailed, "Node", "Warning", "%s", "kubelet/kubelet.go", ""},
	{"InvalidImageID", InvalidImageID, "Node", "Warning", "ImageID is not valid, skipping, image: %v", "kubelet/images/image_gc_manager.go",
		"not applicable: image GC lists the runtime's images by their IDs, never by a name without one"},
	{"InvalidDiskCapacity", InvalidDiskCapacity, "Node", "Warning", "%s", "kubelet/images/image_gc_manager.go", ""},
	{"FreeDiskSpaceFailed", FreeDiskSpaceFailed, "Node", "Warning", "%s", "kubelet/images/image_gc_manager.go", ""},
	{"FailedNodeAllocatableEnforcement", FailedNodeAllocatableEnforcement, "Node", "Warning", "Failed to update Node Allocatable Limits %q: %v", "kubelet/cm/node_container_manager_linux.go", ""},
	{"SuccessfulNodeAllocatableEnforcement", SuccessfulNodeAllocatableEnforcement, "Node", "Normal", "Updated Node Allocatable limit across pods", "kubelet/cm/node_container_manager_linux.go", ""},
	{"PossibleMemoryBackedVolumesOnDisk", PossibleMemoryBackedVolumesOnDisk, "Node", "Warning", "The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) might be swapped to disk and should no longer be considered secure.", "kubelet/cm/container_manager_linux.go", ""},
	{"CgroupV1", CgroupV1, "Node", "Warning", "cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1", "kubelet/kubelet_linux.go", ""},
	{"CheckLimitsForResolvConf", CheckLimitsForResolvConf, "Node", "Warning", "%s (the host's resolv.conf over the limits)", "kubelet/network/dns/dns.go", ""},
	{"MissingClusterDNS", MissingClusterDNS, "Node", "Warning", "kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy. (and on the pod, prefixed with pod: %q.)", "kubelet/network/dns/dns.go", ""},
	{"EvictionThresholdMet", EvictionThresholdMet, "Node", "Warning", "Attempting to reclaim %s", "kubelet/eviction/eviction_manager.go", ""},
	{"Evicted", Evicted, "Pod", "Warning", "%s (the eviction message)", "kubelet/eviction/eviction_manager.go", ""},

	{"SandboxChanged", SandboxChanged, "Pod", "Normal", "Pod sandbox changed, it will be killed and re-created.", "kubelet/kuberuntime/kuberuntime_manager.go", ""},
	{"FailedCreatePodSandBox", FailedCreatePodSandBox, "Pod", "Warning", "Failed to create pod sandbox: %v", "kubelet/kuberuntime/kuberuntime_manager.go", ""},
	{"FailedStatusPodSandBox", FailedStatusPodSandBox, "Pod", "Warning", "Unable to get pod sandbox status: %v", "kubelet/kuberuntime/kuberuntime_manager.go", ""},
	{"FailedPrepareDynamicResources", FailedPrepareDynamicResources, "Pod", "Warning", "Failed to prepare dynamic resources: %v", "kubelet/kuberuntime/kuberuntime_manager.go", ""},

	{"FailedAttachVolume", FailedAttachVolume, "Pod", "Warning", "%s (the attach error)", "volume/util/operationexecutor/operation_generator.go",
		"not applicable: actorlet never attaches; the attach-detach controller does"},
	{"SuccessfulAttachVolume", SuccessfulAttachVolume, "Pod", "Normal", "AttachVolume.Attach succeeded for volume %q", "volume/util/operationexecutor/operation_generator.go",
		"not applicable: actorlet never attaches; the attach-detach controller does"},
	{"FailedMountVolume", FailedMountVolume, "Pod", "Warning", "Unable to attach or mount volumes: %v", "kubelet/kubelet.go", ""},
	{"FailedMapVolume", FailedMapVolume, "Pod", "Warning", "%s (the map error)", "volume/util/operationexecutor/operation_generator.go",
		"not yet: a raw block volume's failure is reported as FailedMount"},
	{"SuccessfulMountVolume", SuccessfulMountVolume, "Pod", "Normal", "MapVolume.MapPodDevice succeeded for volume %q ... (raw block volumes only)", "volume/util/operationexecutor/operation_generator.go",
		"not yet: upstream emits it only for a raw block volume's device mapping, which actorlet does without an event"},
	{"WarnAlreadyMountedVolume", WarnAlreadyMountedVolume, "Pod", "Warning", "The requested fsGroup is %d, but the volume %s has GID %d. The volume may not be shareable.", "volume/local/local.go",
		"not yet: a local volume's GID is not compared with the pod's fsGroup"},
	{"FailedMountOnFilesystemMismatch", FailedMountOnFilesystemMismatch, "PersistentVolume", "Warning", "MountVolume failed ... (filesystem mismatch)", "volume/util/operationexecutor/operation_generator.go",
		"not applicable: actorlet formats no device; its CSI drivers stage volumes themselves"},
	{"VolumeResizeFailed", VolumeResizeFailed, "Pod", "Warning", "%s (the expansion error)", "volume/util/operationexecutor/operation_generator.go", ""},
	{"VolumeResizeSuccess", VolumeResizeSuccess, "PersistentVolumeClaim", "Normal", "ExpandVolume succeeded for volume %s", "volume/util/operationexecutor/operation_generator.go",
		"not applicable: the expand controller's (controller side), not the kubelet's"},
	{"FileSystemResizeFailed", FileSystemResizeFailed, "Pod", "Warning", "MountVolume.NodeExpandVolume failed for volume %q ...", "volume/util/operationexecutor/operation_generator.go", ""},
	{"FileSystemResizeSuccess", FileSystemResizeSuccess, "Pod", "Normal", "MountVolume.NodeExpandVolume succeeded for volume %q ...", "volume/util/operationexecutor/node_expander.go", ""},
	{"VolumePermissionChangeInProgress", VolumePermissionChangeInProgress, "Pod", "Warning", "Setting volume ownership for %s is taking longer than expected, consider using OnRootMismatch - https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#configure-volume-permission-and-ownership-change-policy-for-pods", "volume/volume_linux.go",
		"not yet: a long ownership change is not reported while it runs"},

	{"ContainerUnhealthy", ContainerUnhealthy, "Pod", "Warning", "%s probe failed: %s", "kubelet/prober/prober.go", ""},
	{"ContainerProbeWarning", ContainerProbeWarning, "Pod", "Warning", "%s probe warning: %s", "kubelet/prober/prober.go", ""},
	{"FailedSync", FailedSync, "Pod", "Warning", "error determining status: %v", "kubelet/pod_workers.go", ""},
	{"FailedValidation", FailedValidation, "Pod", "Warning", "Error validating pod %s from %s due to duplicate pod name %q, ignoring", "kubelet/config/config.go", ""},
	{"FailedPostStartHook", FailedPostStartHook, "Pod", "Warning", "PostStartHook failed", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"FailedPreStopHook", FailedPreStopHook, "Pod", "Warning", "PreStopHook failed", "kubelet/kuberuntime/kuberuntime_container.go", ""},
	{"LifecycleHTTPFallback", LifecycleHTTPFallback, "Pod", "Warning", "request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", "kubelet/lifecycle/handlers.go", ""},
}

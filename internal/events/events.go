// Package events holds the reasons of the events upstream's kubelet emits,
// under upstream's names (pkg/kubelet/events and the emitters that spell
// their reasons inline), and Upstream, the table of every event upstream's
// kubelet can emit with whether actorlet does. Every emitter uses these
// constants rather than string literals: the table's test finds each use.
package events

// Container reasons.
const (
	CreatedContainer        = "Created"
	StartedContainer        = "Started"
	FailedToCreateContainer = "Failed"
	FailedToStartContainer  = "Failed"
	KillingContainer        = "Killing"
	PreemptContainer        = "Preempting"
	BackOffStartContainer   = "BackOff"
	ExceededGracePeriod     = "ExceededGracePeriod"
)

// Pod reasons.
const (
	FailedToKillPod                 = "FailedKillPod"
	FailedToCreatePodContainer      = "FailedCreatePodContainer"
	FailedToMakePodDataDirectories  = "Failed"
	NetworkNotReady                 = "NetworkNotReady"
	ResizeDeferred                  = "ResizeDeferred"
	ResizeInfeasible                = "ResizeInfeasible"
	ResizeCompleted                 = "ResizeCompleted"
	ResizeStarted                   = "ResizeStarted"
	ResizeError                     = "ResizeError"
	FailedNodeDeclaredFeaturesCheck = "FailedNodeDeclaredFeaturesCheck"
	FailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"
	DeadlineExceeded                = "DeadlineExceeded"
	HostIPsIPFamilyMismatch         = "HostIPsIPFamilyMismatch"
	DNSConfigForming                = "DNSConfigForming"
	// PodCertificateDenied and PodCertificateFailed are the condition
	// types of a PodCertificateRequest, which upstream uses as reasons.
	PodCertificateDenied         = "Denied"
	PodCertificateFailed         = "Failed"
	CertificateOverdueForRefresh = "CertificateOverdueForRefresh"
	CertificateExpired           = "CertificateExpired"
)

// Image reasons.
const (
	PullingImage            = "Pulling"
	PulledImage             = "Pulled"
	FailedToPullImage       = "Failed"
	FailedToInspectImage    = "InspectFailed"
	ErrImageNeverPullPolicy = "ErrImageNeverPull"
	BackOffPullImage        = "BackOff"
)

// Kubelet and volume reasons.
const (
	NodeReady                            = "NodeReady"
	NodeNotReady                         = "NodeNotReady"
	NodeSchedulable                      = "NodeSchedulable"
	NodeNotSchedulable                   = "NodeNotSchedulable"
	StartingKubelet                      = "Starting"
	KubeletSetupFailed                   = "KubeletSetupFailed"
	FailedAttachVolume                   = "FailedAttachVolume"
	FailedMountVolume                    = "FailedMount"
	VolumeResizeFailed                   = "VolumeResizeFailed"
	VolumeResizeSuccess                  = "VolumeResizeSuccessful"
	FileSystemResizeFailed               = "FileSystemResizeFailed"
	VolumePermissionChangeInProgress     = "VolumePermissionChangeInProgress"
	FileSystemResizeSuccess              = "FileSystemResizeSuccessful"
	FailedMapVolume                      = "FailedMapVolume"
	WarnAlreadyMountedVolume             = "AlreadyMountedVolume"
	SuccessfulAttachVolume               = "SuccessfulAttachVolume"
	SuccessfulMountVolume                = "SuccessfulMountVolume"
	NodeRebooted                         = "Rebooted"
	NodeShutdown                         = "Shutdown"
	ContainerGCFailed                    = "ContainerGCFailed"
	ImageGCFailed                        = "ImageGCFailed"
	FailedNodeAllocatableEnforcement     = "FailedNodeAllocatableEnforcement"
	SuccessfulNodeAllocatableEnforcement = "NodeAllocatableEnforced"
	SandboxChanged                       = "SandboxChanged"
	FailedCreatePodSandBox               = "FailedCreatePodSandBox"
	FailedStatusPodSandBox               = "FailedPodSandBoxStatus"
	FailedMountOnFilesystemMismatch      = "FailedMountOnFilesystemMismatch"
	FailedPrepareDynamicResources        = "FailedPrepareDynamicResources"
	PossibleMemoryBackedVolumesOnDisk    = "PossibleMemoryBackedVolumesOnDisk"
	CgroupV1                             = "CgroupV1"
	SystemOOM                            = "SystemOOM"
	CheckLimitsForResolvConf             = "CheckLimitsForResolvConf"
	MissingClusterDNS                    = "MissingClusterDNS"
)

// Node condition reasons (upstream's node status setters).
const (
	NodeHasSufficientMemory   = "NodeHasSufficientMemory"
	NodeHasInsufficientMemory = "NodeHasInsufficientMemory"
	NodeHasNoDiskPressure     = "NodeHasNoDiskPressure"
	NodeHasDiskPressure       = "NodeHasDiskPressure"
	NodeHasSufficientPID      = "NodeHasSufficientPID"
	NodeHasInsufficientPID    = "NodeHasInsufficientPID"
)

// Image manager, probe, pod worker, config, hook and eviction reasons.
const (
	InvalidImageID        = "InvalidImageID"
	InvalidDiskCapacity   = "InvalidDiskCapacity"
	FreeDiskSpaceFailed   = "FreeDiskSpaceFailed"
	ContainerUnhealthy    = "Unhealthy"
	ContainerProbeWarning = "ProbeWarning"
	FailedSync            = "FailedSync"
	FailedValidation      = "FailedValidation"
	FailedPostStartHook   = "FailedPostStartHook"
	FailedPreStopHook     = "FailedPreStopHook"
	LifecycleHTTPFallback = "LifecycleHTTPFallback"
	EvictionThresholdMet  = "EvictionThresholdMet"
	Evicted               = "Evicted"
)

// Messages upstream formats alike in several places.
const (
	// NodeStatusMessage is the message of a node condition's event:
	// the node's name, then the reason.
	NodeStatusMessage = "Node %s status is now: %s"
)

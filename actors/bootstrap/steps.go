package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/mount-utils"

	"github.com/actorlet/actorlet/actors/configsource"
	"github.com/actorlet/actorlet/actors/devicemanager"
	"github.com/actorlet/actorlet/actors/dramanager"
	"github.com/actorlet/actorlet/actors/eviction"
	"github.com/actorlet/actorlet/actors/gc"
	"github.com/actorlet/actorlet/actors/kubeletapi"
	"github.com/actorlet/actorlet/actors/nodeshutdown"
	"github.com/actorlet/actorlet/actors/pleg"
	"github.com/actorlet/actorlet/actors/pluginmanager"
	"github.com/actorlet/actorlet/actors/podmanager"
	"github.com/actorlet/actorlet/actors/prober"
	"github.com/actorlet/actorlet/actors/statusreporter"
	"github.com/actorlet/actorlet/actors/volumemanager"
	"github.com/actorlet/actorlet/config"
	"github.com/actorlet/actorlet/config/features"
	"github.com/actorlet/actorlet/internal/certificates"
	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/credprovider"
	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/dependencies"
	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/internal/evictionpolicy"
	"github.com/actorlet/actorlet/internal/hostsetup"
	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/kubeletapi/auth"
	"github.com/actorlet/actorlet/internal/kubeletapi/stats"
	"github.com/actorlet/actorlet/internal/lifecycle"
	"github.com/actorlet/actorlet/internal/logging"
	"github.com/actorlet/actorlet/internal/memorymanager"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/nodecapacity"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/probe"
	"github.com/actorlet/actorlet/internal/runtimeclass"
	"github.com/actorlet/actorlet/internal/services"
	"github.com/actorlet/actorlet/internal/userns"
	"github.com/actorlet/actorlet/internal/version"
	"github.com/actorlet/actorlet/internal/volume"
	"github.com/actorlet/actorlet/internal/volume/apisource"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// outcome tells the bootstrap actor what to do after a step.
type outcome int

const (
	next     outcome = iota // go on with the next step
	exitNow                 // the command is complete (--help, --version, --dump-config)
	reported                // failed, and the step already printed why
)

type step struct {
	name  string // in RunStep messages, logs and the registry
	title string // in the one line that reports a failure
	run   func(a *Actor, ctx actor.Context) (outcome, error)
}

// systemdRunDir tells whether systemd is the init system
// (cgroups.CheckCgroupDriver); a variable for tests.
var systemdRunDir = cgroups.SystemdRunDir

// steps is the start-up sequence, in order (docs/startup.md).
var steps = []step{
	{"parse-flags", "parse flags", (*Actor).parseFlags},
	{"load-config", "load configuration", (*Actor).loadConfig},
	{"feature-gates", "feature gates", (*Actor).featureGates},
	{"validate", "validate configuration", (*Actor).validate},
	{"tls-bootstrap", "TLS bootstrap", (*Actor).tlsBootstrap},
	{"build-dependencies", "build dependencies", (*Actor).buildDependencies},
	{"spawn-runtime", "spawn runtime actors", (*Actor).spawnRuntime},
}

func stepIndex(name string) int {
	for i, s := range steps {
		if s.name == name {
			return i
		}
	}
	return -1
}

// parseFlags parses the command line and applies --feature-gates, the first
// of the two times upstream applies feature gates. --help and --version
// answer here, before anything is loaded.
func (a *Actor) parseFlags(actor.Context) (outcome, error) {
	cl, err := config.ParseCommandLine(a.p.Args)
	if err != nil {
		var usage *config.UsageError
		if errors.As(err, &usage) {
			fmt.Fprintf(a.p.Stderr, "Error: %s\n%s", usage.Err, usage.Usage)
			return reported, err
		}
		return next, err
	}
	a.cmdline = cl
	if cl.Options.ShowHelp {
		fmt.Fprint(a.p.Stdout, cl.Help())
		return exitNow, nil
	}
	if cl.Options.ShowVersion {
		fmt.Fprintln(a.p.Stdout, version.Flag())
		return exitNow, nil
	}
	gates, warnings, err := cl.FeatureGates()
	if err != nil {
		return next, err
	}
	a.warn(warnings)
	a.gates = gates
	// Upstream validates its command-line-only flags here, before loading
	// the configuration: of those actorlet has, --node-labels.
	if err := config.ValidateNodeLabels(cl.Options.NodeLabels); err != nil {
		return next, fmt.Errorf("failed to validate kubelet flags: %w", err)
	}
	if cl.Options.PodInfraContainerImage != "" {
		a.log.Warn().Str("flag", "--pod-infra-container-image").Msg(
			"the container runtime is remote: its own sandbox image setting is used and this flag is ignored")
	}
	return next, nil
}

// loadConfig merges defaults, --config, --config-dir and the flags.
func (a *Actor) loadConfig(actor.Context) (outcome, error) {
	cfg, warnings, err := config.Load(a.cmdline)
	if err != nil {
		return next, err
	}
	a.warn(warnings)
	a.cfg = cfg
	return next, a.reservedCPUsOverride()
}

// featureGates applies the merged configuration's featureGates, the second
// time, as upstream does, so that the file can set gates too.
func (a *Actor) featureGates(actor.Context) (outcome, error) {
	warnings, err := a.gates.SetFromMap(a.cfg.FeatureGates)
	if err != nil {
		return next, err
	}
	a.warn(warnings)
	for name, spec := range features.Known {
		metrics.SetFeatureEnabled(name, spec.Stage.Upstream(), a.gates.Enabled(name))
	}
	for gate, what := range gatesNotImplemented {
		if a.gates.Enabled(gate) {
			a.log.Warn().Str("featureGate", gate).Msg("accepted, not implemented: " + what)
		}
	}
	return next, nil
}

// gatesNotImplemented are the feature gates whose behaviour actorlet lacks:
// each that is on is said at start-up, so that nobody believes it is in
// force.
var gatesNotImplemented = map[string]string{
	// Alpha, off by default: said only when turned on.
	"RuntimeClassInImageCriAPI": "images are pulled, listed and collected without the runtime handler of their pods' RuntimeClass",
}

// validate checks the final configuration, then switches to the configured
// logger and replays the steps so far into it. --dump-config ends here.
func (a *Actor) validate(actor.Context) (outcome, error) {
	if err := config.Validate(a.cfg, a.gates); err != nil {
		return next, err
	}
	if a.cmdline.Options.DumpConfig {
		out, err := config.Dump(a.cfg)
		if err != nil {
			return next, err
		}
		_, err = a.p.Stdout.Write(out)
		return exitNow, err
	}
	// After --dump-config, which shows a configuration without running it,
	// so that it can be shown on any host.
	if err := config.ValidateOnHost(a.cfg, !cgroups.IsV2("/sys/fs/cgroup")); err != nil {
		return next, err
	}
	log, err := logging.New(a.p.Stderr, a.cfg.Logging.Format, uint32(a.cfg.Logging.Verbosity))
	if err != nil {
		return next, err
	}
	a.log = log.With().Str("actor", Kind).Logger()
	a.p.System.SetLogger(log)
	logging.RouteKlog(log)
	a.log.Info().Str("version", version.String()).Msg("starting")
	for _, s := range a.p.System.Registry.Steps() {
		a.logStep(s)
	}
	return next, nil
}

// tlsBootstrap gets the node its client certificate with the
// --bootstrap-kubeconfig credentials when the --kubeconfig file is missing
// or its certificate unusable, as upstream's LoadClientCert, and writes the
// kubeconfig the next steps use. It runs before the dependencies so that
// every client is built with the node's own identity; upstream with
// rotateCertificates bootstraps in the background instead, which would
// leave the node without an identity and with no step to fail.
func (a *Actor) tlsBootstrap(actor.Context) (outcome, error) {
	o := a.cmdline.Options
	if o.BootstrapKubeconfig == "" {
		a.log.Info().Msg("no --bootstrap-kubeconfig: no TLS bootstrap")
		return next, nil
	}
	if o.Kubeconfig == "" {
		return next, errors.New("--bootstrap-kubeconfig needs --kubeconfig, the file the bootstrap writes")
	}
	name, err := dependencies.NodeName(o.HostnameOverride)
	if err != nil {
		return next, err
	}
	_, err = certificates.Bootstrap(a.p.Ctx, certificates.BootstrapConfig{
		Kubeconfig: o.Kubeconfig, BootstrapKubeconfig: o.BootstrapKubeconfig, CertDir: o.CertDir,
		NodeName: name, Log: a.log,
	})
	return next, err
}

func (a *Actor) buildDependencies(actor.Context) (outcome, error) {
	c, o := a.cfg, a.cmdline.Options
	deps, err := dependencies.Build(a.p.Ctx, dependencies.Input{
		RuntimeEndpoint:           c.ContainerRuntimeEndpoint,
		ImageEndpoint:             c.ImageServiceEndpoint,
		Kubeconfig:                o.Kubeconfig,
		KubeAPIQPS:                float32(deref(c.KubeAPIQPS)),
		KubeAPIBurst:              int(c.KubeAPIBurst),
		ContentType:               c.ContentType,
		EventQPS:                  float32(deref(c.EventRecordQPS)),
		EventBurst:                int(c.EventBurst),
		NodeStatusUpdateFrequency: c.NodeStatusUpdateFrequency.Duration,
		NodeLeaseDuration:         time.Duration(c.NodeLeaseDurationSeconds) * time.Second,
		HostnameOverride:          o.HostnameOverride,
		NodeIP:                    o.NodeIP,
		RootDir:                   o.RootDir,
		OOMScoreAdj:               deref(c.OOMScoreAdj),
		RotateCertificates:        c.RotateCertificates,
		BootstrapKubeconfig:       o.BootstrapKubeconfig,
		CertDir:                   o.CertDir,
	}, a.log)
	if err != nil {
		return next, err
	}
	a.deps = deps
	if err := a.cgroupDriver(); err != nil {
		return next, err
	}
	// The kubelet API's credentials are dependencies too, as upstream's
	// BuildAuth and InitializeTLS: a node that cannot guard its API does not
	// start at all.
	if c.EnableServer == nil || *c.EnableServer {
		if err := a.servingCertificate(); err != nil {
			return next, fmt.Errorf("kubelet API: %w", err)
		}
		filter, err := auth.New(auth.Config{Authentication: c.Authentication, Authorization: c.Authorization,
			Client: deps.Kube, NodeName: deps.NodeName, Log: a.log.With().Str("component", "kubelet-api-auth").Logger()})
		if err != nil {
			return next, fmt.Errorf("kubelet API: %w", err)
		}
		a.apiAuth = filter
	}
	return next, nil
}

// runtimeActors are spawned in this order and stopped in the reverse one:
// the status-reporter exists before any status is reported and goes last,
// after the final statuses; the plugin-manager outlives the volume-manager,
// whose CSI volumes need their drivers registered until they are torn
// down; the device-manager outlives the pod-manager, whose containers ask
// it for their devices; the pod-manager exists before anything sends it
// pods; the kubelet-API actor stops taking requests before anything else goes. Each entry builds its
// actor's Props from the configuration, the dependencies and the PIDs of the
// actors spawned before it.
var runtimeActors = []struct {
	kind  string
	props func(a *Actor, env *runtimeEnv) *actor.Props
}{
	{statusreporter.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		d := a.deps
		return a.p.System.Registry.Props(statusreporter.Kind, statusreporter.New(statusreporter.Params{
			Kube: d.Kube, Heartbeat: d.Heartbeat, NodeName: d.NodeName, NodeIP: d.NodeIP, Config: a.cfg, NodeLabels: a.cmdline.Options.NodeLabels,
			Capacity: env.capacity, Allocatable: env.allocatable, RootDir: d.RootDir, RuntimeVersion: d.RuntimeVersion,
			Runtime: d.Runtime, Images: d.Images, PLEG: a.child(pleg.Kind), Events: d.Events, Log: a.log,
			PodManager: a.child(podmanager.Kind), VolumeManager: a.child(volumemanager.Kind),
			PluginManager: a.child(pluginmanager.Kind),
		}), nil)
	}},
	{pluginmanager.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		p := pluginmanager.Params{Dir: dependencies.PluginsRegistrationDir(a.deps.RootDir), Drivers: env.csiDrivers, Log: a.log}
		if a.deps.Kube != nil {
			p.NodeInfo = &csi.NodeInfoManager{Kube: a.deps.Kube, NodeName: a.deps.NodeName}
			p.DRADrivers = env.draDrivers
		}
		return a.p.System.Registry.Props(pluginmanager.Kind, pluginmanager.New(p), nil)
	}},
	{dramanager.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(dramanager.Kind, dramanager.New(dramanager.Params{
			Kube: a.deps.Kube, Drivers: env.draDrivers, RootDir: a.deps.RootDir,
			PodManager: a.child(podmanager.Kind), Events: a.deps.Events, Log: a.log,
		}), nil)
	}},
	{devicemanager.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(devicemanager.Kind, devicemanager.New(devicemanager.Params{
			RootDir: a.deps.RootDir, PodManager: a.child(podmanager.Kind), StatusReporter: a.child(statusreporter.Kind),
			PodResources: true, Log: a.log,
		}), nil)
	}},
	{volumemanager.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(volumemanager.Kind, volumemanager.New(volumemanager.Params{
			Host: env.volumes, Registrar: env.volumeSources, PodManager: a.child(podmanager.Kind), StatusReporter: a.child(statusreporter.Kind),
			Resync: a.cfg.SyncFrequency.Duration, UserNamespaces: env.userNamespaces(), Events: a.deps.Events, Log: a.log,
		}), nil)
	}},
	{podmanager.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(podmanager.Kind, podmanager.New(podmanager.Params{
			Registry: a.p.System.Registry, Runtime: env.runtime, MaxContainerRestartPeriod: env.maxRestartPeriod,
			Sources: env.sources, MaxPods: int(env.maxPods), Allocatable: env.allocatable, RootDir: a.deps.RootDir,
			Sysctls: env.sysctls, AppArmor: podmanager.AppArmorHost(), ImageVolumes: podmanager.ImageVolumeRuntime(a.deps.RuntimeVersion),
			AwaitNode: true, Events: a.deps.Events,
			StatusReporter: a.child(statusreporter.Kind), ConfigSource: a.child(configsource.Kind),
			VolumeManager: a.child(volumemanager.Kind), DRAManager: a.draManager(), CPUManager: env.cpus, MemoryManager: env.memory, Log: a.log,
			// Each pod-worker's prober runs its pod's probes through the
			// runtime, recording their events as the runtime's own.
			Prober: prober.Props(prober.Params{
				Runner: &probe.Runner{RT: a.deps.Runtime, Recorder: a.deps.Events,
					RequestTimeout: a.cfg.RuntimeRequestTimeout.Duration},
				// Past the runner's own bound on an exec probe.
				RunSlack:     a.cfg.RuntimeRequestTimeout.Duration + 30*time.Second,
				KubeletStart: time.Now(), Registry: a.p.System.Registry, Log: a.log,
			}),
		}), podmanager.WorkerStrategy(a.p.System.Registry))
	}},
	{configsource.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		c := a.cfg
		return a.p.System.Registry.Props(configsource.Kind, configsource.New(configsource.Params{
			StaticPodPath: c.StaticPodPath, FileCheckFrequency: c.FileCheckFrequency.Duration,
			ManifestURL: c.StaticPodURL, ManifestURLHeader: c.StaticPodURLHeader, HTTPCheckFrequency: c.HTTPCheckFrequency.Duration,
			NodeName: a.deps.NodeName, Kube: a.deps.Kube, PodManager: a.child(podmanager.Kind), Events: a.deps.Events, Log: a.log,
			UserNamespacesHostNetwork: a.gates.Enabled("UserNamespacesHostNetworkSupport"),
		}), nil)
	}},
	{pleg.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(pleg.Kind, pleg.New(pleg.Params{
			Runtime: a.deps.Runtime, Period: time.Second, Timeout: a.cfg.RuntimeRequestTimeout.Duration,
			PodManager: a.child(podmanager.Kind), Log: a.log,
		}), nil)
	}},
	{gc.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(gc.Kind, gc.New(gc.Params{
			Runtime: a.deps.Runtime, Images: a.deps.Images, PodManager: a.child(podmanager.Kind), Config: a.cfg,
			ContainerGCPeriod: time.Minute, ImageGCPeriod: 5 * time.Minute,
			MinContainerAge: 0, MaxPerPodContainer: 1, MaxContainers: -1,
			PodLogsDir: a.cfg.PodLogsDir, RootDir: a.deps.RootDir, Log: a.log,
			ContainerLogsDir: podruntime.DefaultContainerLogsDir,
			Events:           a.deps.Events, NodeName: a.deps.NodeName, Registry: a.p.System.Registry,
			CgroupRoot: "/sys/fs/cgroup", PodCgroupParents: env.cgroups.PodParents(), CgroupDriver: env.runtime.Opts.CgroupDriver,
			StopSlice: cgroups.StopSystemdUnit, PulledImages: env.pulledImages(),
		}), nil)
	}},
	{eviction.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		return a.p.System.Registry.Props(eviction.Kind, eviction.New(eviction.Params{
			Stats: env.stats, Config: env.eviction, DedicatedImageFs: dedicatedImageFs(a.p.Ctx, a.deps.Images, a.deps.RootDir, a.log),
			PodManager: a.child(podmanager.Kind), StatusReporter: a.child(statusreporter.Kind), GC: a.child(gc.Kind),
			Events: a.deps.Events, NodeName: a.deps.NodeName, Registry: a.p.System.Registry, Log: a.log,
			LocalStorageCapacityIsolation: deref(a.cfg.LocalStorageCapacityIsolation),
		}), nil)
	}},
	{nodeshutdown.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		c := a.cfg
		return a.p.System.Registry.Props(nodeshutdown.Kind, nodeshutdown.New(nodeshutdown.Params{
			Groups: nodeshutdown.Groups(c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration,
				c.ShutdownGracePeriodByPodPriority, a.gates.Enabled("GracefulNodeShutdownBasedOnPodPriority")),
			RootDir: a.deps.RootDir, Metrics: a.gates.Enabled("GracefulNodeShutdownBasedOnPodPriority"),
			PodManager: a.child(podmanager.Kind), StatusReporter: a.child(statusreporter.Kind),
			Events: a.deps.Events, NodeName: a.deps.NodeName, Registry: a.p.System.Registry, Log: a.log,
		}), nil)
	}},
	{kubeletapi.Kind, func(a *Actor, env *runtimeEnv) *actor.Props {
		c := a.cfg
		port := c.Port
		if a.apiAuth == nil {
			port = 0 // enableServer: false
		}
		return a.p.System.Registry.Props(kubeletapi.Kind, kubeletapi.New(kubeletapi.Params{
			HealthzAddress: c.HealthzBindAddress, HealthzPort: deref(c.HealthzPort),
			Address: c.Address, Port: port, ReadOnlyPort: c.ReadOnlyPort,
			ServingCert: a.apiCert, GetServingCert: a.getServingCert(), TLS: a.apiTLS, Auth: a.apiAuth,
			NodeName:        a.deps.NodeName,
			Stats:           env.stats,
			Runtime:         a.deps.Runtime,
			SplitLogStreams: a.gates.Enabled("PodLogsQuerySplitStreams"),
			Configz:         c.DeepCopy(),
			Debugging: kubeletapi.Debugging{Handlers: deref(c.EnableDebuggingHandlers), SystemLogs: deref(c.EnableSystemLogHandler),
				Profiling: deref(c.EnableProfilingHandler), ContentionProfiling: c.EnableContentionProfiling, Flags: deref(c.EnableDebugFlagsHandler)},
			DebugAddress:   a.cmdline.Options.DebugAddress,
			FaultInjection: a.cmdline.Options.DebugFaultInjection,
			PodManager:     a.child(podmanager.Kind), PLEG: a.child(pleg.Kind), System: a.p.System, Log: a.log,
		}), nil)
	}},
}

// cgroupDriver settles the pods' cgroup driver as upstream: the
// runtime's when it tells it, cgroupDriver otherwise. It must work on
// this machine: checked here, before anything starts, rather than by
// every pod failing in the runtime.
func (a *Actor) cgroupDriver() error {
	driver, fromRuntime, err := cgroups.RuntimeCgroupDriver(a.p.Ctx, a.deps.Runtime)
	if err != nil {
		return err
	}
	if fromRuntime && driver != a.cfg.CgroupDriver {
		a.log.Info().Str("cgroupDriver", a.cfg.CgroupDriver).Str("runtime", driver).
			Msg("the container runtime's cgroup driver is used, not cgroupDriver's (KubeletCgroupDriverFromCRI)")
		a.cfg.CgroupDriver = driver
	}
	if err := cgroups.CheckCgroupDriver(a.cfg.CgroupDriver, systemdRunDir, fromRuntime); err != nil {
		return err
	}
	_, err = cgroups.PodsCgroupParent(a.cfg.CgroupRoot, a.cfg.CgroupDriver)
	return err
}

// defaultPodSysctls are defaultPodSysctls when the DefaultPodSysctls gate
// is on (validation refuses them otherwise).
func defaultPodSysctls(sysctls map[string]string, gate bool) map[string]string {
	if !gate {
		return nil
	}
	return sysctls
}

// runtimeEnv is what the runtime actors share beyond the dependencies.
type runtimeEnv struct {
	runtime     *podruntime.Runtime
	cgroups     *cgroups.Manager
	sources     []string
	capacity    v1.ResourceList
	allocatable v1.ResourceList
	// maxPods is the pods the node takes: maxPods, lowered by
	// podsPerCore.
	maxPods          int32
	maxRestartPeriod time.Duration
	// sysctls are the sysctls pods may set.
	sysctls *podmanager.SysctlAllowlist
	// volumes sets up pods' volumes; volumeSources (nil without an API
	// server) reads the API objects they show.
	volumes       *volume.Host
	volumeSources volumemanager.Registrar
	// userns allocates the user namespace ranges of pods with hostUsers:
	// false.
	userns *userns.Manager
	// stats reads /stats/summary, for the kubelet API and the eviction
	// manager: one provider, so that its CPU rates and volume usages are
	// measured once.
	stats *stats.Provider
	// eviction is the eviction manager's configuration, parsed.
	eviction evictionpolicy.Config
	// pullRecords are the records of pulled images' credentials; nil
	// with KubeletEnsureSecretPulledImages off.
	pullRecords *imagepull.Manager
	// csiDrivers are the CSI drivers registered on the node: the
	// plugin-manager writes them, CSI volumes will read them.
	csiDrivers *registry.Registry
	// draDrivers are the DRA drivers registered on the node, which the
	// dra-manager calls.
	draDrivers *dra.Registry
	// cpus configures the CPU and topology managers.
	cpus *podmanager.CPUManager
	// memory is the memory manager, owned by the pod-manager.
	memory *podmanager.MemoryManager
}

// pulledImages is what the image GC prunes the records of removed images
// with: none without records (and no typed nil in the interface).
func (e *runtimeEnv) pulledImages() gc.PulledImages {
	if e.pullRecords == nil {
		return nil
	}
	return e.pullRecords
}

// child is the PID of the runtime actor of kind; children are named by kind.
// draManager is the dra-manager the pod-workers ask, nil without an API
// server: claims live in the API.
func (a *Actor) draManager() *actor.PID {
	if a.deps.Kube == nil {
		return nil
	}
	return a.child(dramanager.Kind)
}

func (a *Actor) child(kind string) *actor.PID {
	return actor.NewPID(a.p.System.Address(), Kind+"/"+kind)
}

func (a *Actor) spawnRuntime(ctx actor.Context) (outcome, error) {
	env, err := a.runtimeEnv()
	if err != nil {
		return next, err
	}
	// maxOpenFiles, as upstream once the kubelet is built: a failure is
	// logged.
	if err := hostsetup.SetNumFiles(uint64(a.cfg.MaxOpenFiles)); err != nil {
		a.log.Error().Err(err).Int64("maxOpenFiles", a.cfg.MaxOpenFiles).Msg("failed to set rlimit on max file handles")
	}
	metrics.RegisterActors(actorCounts(a.p.System.Registry))
	for _, ra := range runtimeActors {
		pid, err := ctx.SpawnNamed(ra.props(a, env), ra.kind)
		if err != nil {
			return next, fmt.Errorf("spawn %s: %w", ra.kind, err)
		}
		a.children = append(a.children, pid)
	}
	mode := "standalone"
	if a.deps.Kube != nil {
		mode = "cluster"
	}
	a.log.Info().Str("node", a.deps.NodeName).Str("nodeIP", a.deps.NodeIP.String()).Str("mode", mode).
		Str("rootDir", a.deps.RootDir).Int("pid", os.Getpid()).Msg("actorlet is running")
	return next, nil
}

func (a *Actor) runtimeEnv() (*runtimeEnv, error) {
	c := a.cfg
	if err := a.checkHost(); err != nil {
		return nil, err
	}
	// podsPerCore lowers the node's pods as upstream's, in capacity and
	// in admission, which counts against allocatable.
	maxPods := nodecapacity.MaxPods(c.MaxPods, c.PodsPerCore, goruntime.NumCPU())
	capacity, err := nodecapacity.Capacity("/proc/meminfo", maxPods)
	if err != nil {
		return nil, err
	}
	// Huge pages are capacity (and allocatable) as upstream reports them.
	hugePages, err := nodecapacity.HugePages(nodecapacity.HugePagesDir)
	if err != nil {
		return nil, err
	}
	maps.Copy(capacity, hugePages)
	allocatable, err := nodecapacity.Allocatable(capacity, c.KubeReserved, c.SystemReserved, c.EvictionHard)
	if err != nil {
		return nil, err
	}
	env := &runtimeEnv{capacity: capacity, allocatable: allocatable, maxPods: maxPods, maxRestartPeriod: 5 * time.Minute,
		csiDrivers: registry.New(), draDrivers: dra.NewRegistry()}
	if env.sysctls, err = podmanager.NodeSysctlAllowlist(c.AllowedUnsafeSysctls); err != nil {
		return nil, err
	}
	if p := c.CrashLoopBackOff.MaxContainerRestartPeriod; p != nil && a.gates.Enabled("KubeletCrashLoopBackOffMax") {
		env.maxRestartPeriod = p.Duration
	}
	if c.StaticPodPath != "" {
		env.sources = append(env.sources, messages.SourceFile)
	}
	if c.StaticPodURL != "" {
		env.sources = append(env.sources, messages.SourceHTTP)
	}
	if a.deps.Kube != nil {
		env.sources = append(env.sources, messages.SourceAPI)
	}
	env.volumes = &volume.Host{RootDir: a.deps.RootDir, NodeName: a.deps.NodeName,
		NodeAllocatable: allocatable, Mounter: mount.New(""), CSIDrivers: env.csiDrivers,
		KubeletAttaches: c.EnableControllerAttachDetach != nil && !*c.EnableControllerAttachDetach,
		Events:          a.deps.Events}
	if a.deps.Kube != nil {
		// The objects volumes show, read as the node: with the Watch
		// strategy, a watch per object the node's pods reference, whose
		// changes refresh those pods.
		system, vm := a.p.System.ActorSystem, a.child(volumemanager.Kind)
		sources := apisource.New(a.Context(), a.deps.Kube, apisource.Options{
			OnChange: func(kind, namespace, name string) {
				supervision.TellFromOutside(system, vm, &messages.VolumeSourceChanged{Kind: kind, Namespace: namespace, Name: name})
			},
			Log:             a.log.With().Str("component", "volume-sources").Logger(),
			ChangeDetection: string(c.ConfigMapAndSecretChangeDetectionStrategy),
		})
		env.volumes.Sources, env.volumeSources = sources, sources
	}
	pods, err := cgroups.PodsCgroupParent(c.CgroupRoot, c.CgroupDriver)
	if err != nil {
		return nil, err
	}
	cpuSets := &cpumanager.View{}
	if env.cgroups, err = a.podCgroups(capacity, cpuSets); err != nil {
		return nil, err
	}
	if err := a.systemCgroups(env.cgroups); err != nil {
		return nil, err
	}
	mem := capacity[v1.ResourceMemory]
	memoryNodes := &memorymanager.View{}
	env.runtime = &podruntime.Runtime{RT: a.deps.Runtime, Img: a.deps.Images, Opts: podruntime.Options{
		ClusterDNS: c.ClusterDNS, ClusterDomain: c.ClusterDomain, ResolvConf: deref(c.ResolverConfig),
		CgroupParentRoot: pods, CgroupDriver: c.CgroupDriver, Cgroups: env.cgroups,
		NodeName: a.deps.NodeName, NodeIP: a.deps.NodeIP.String(),
		NodeMemoryCapacity: mem.Value(), NodeAllocatable: allocatable, CPUSets: cpuSets, MemoryNodes: memoryNodes,
		RuntimeRequestTimeout: c.RuntimeRequestTimeout.Duration,
		Recorder:              a.deps.Events,
		PodLogsDir:            c.PodLogsDir,
		ContainerLogsDir:      podruntime.DefaultContainerLogsDir,
		Log:                   a.log.With().Str("component", "podruntime").Logger(),
		Subpaths:              env.volumes,
		RootDir:               a.deps.RootDir,
		SeccompDefault:        deref(c.SeccompDefault) || a.cmdline.Options.SeccompDefault,
		CgroupV2:              env.cgroups.V2(),
		SingleProcessOOMKill:  singleProcessOOMKill(c.SingleProcessOOMKill, env.cgroups.V2()),
		Swap:                  a.swap(env.cgroups.V2(), mem.Value()),
		NoCPUCFSQuota:         c.CPUCFSQuota != nil && !*c.CPUCFSQuota,
		CPUCFSQuotaPeriod:     a.cfsQuotaPeriod(),
		DefaultPodSysctls:     defaultPodSysctls(c.DefaultPodSysctls, a.gates.Enabled("DefaultPodSysctls")),
		Hooks:                 &lifecycle.Runner{RT: a.deps.Runtime, Recorder: a.deps.Events},
		DevicePlugins:         devicemanager.Client{System: a.p.System.ActorSystem, PID: a.child(devicemanager.Kind)},
	}}
	numa, err := memorymanager.Discover(sysRoot, uint64(mem.Value()))
	if err != nil {
		return nil, fmt.Errorf("reading the NUMA nodes' memory: %w", err)
	}
	if env.cpus, err = a.cpuManager(env.runtime, cpuSets, numa); err != nil {
		return nil, err
	}
	if env.memory, err = a.memoryManager(numa, capacity, allocatable, memoryNodes); err != nil {
		return nil, err
	}
	if a.gates.Enabled("KubeletEnsureSecretPulledImages") {
		// The credentials each image was pulled with, so that a pod
		// uses an image on the node only with credentials that pulled
		// it, or after pulling it with its own.
		policy, err := imagepull.NewPolicy(c.ImagePullCredentialsVerificationPolicy, c.PreloadedImagesVerificationAllowlist)
		if err != nil {
			return nil, err
		}
		records, err := imagepull.New(a.Context(), a.deps.RootDir, policy, a.deps.Images,
			a.log.With().Str("component", "imagepull").Logger())
		if err != nil {
			return nil, err
		}
		env.runtime.Opts.PullRecords, env.pullRecords = records, records
	}
	env.runtime.Opts.Pulls = imagepull.NewLimiter(deref(c.SerializeImagePulls), c.MaxParallelImagePulls, deref(c.RegistryPullQPS), c.RegistryBurst)
	if o := a.cmdline.Options; o.ImageCredentialProviderConfig != "" || o.ImageCredentialProviderBinDir != "" {
		// As upstream, a configuration that cannot be used fails the
		// start rather than leave pulls without the plugins' credentials.
		// Plugins in service account token mode read the pods' service
		// accounts and ask for their tokens as the volumes do.
		var accounts credprovider.ServiceAccounts
		if sources, ok := env.volumeSources.(*apisource.Sources); ok && sources != nil {
			accounts = sources
		}
		plugins, err := credprovider.New(o.ImageCredentialProviderConfig, o.ImageCredentialProviderBinDir,
			a.gates.Enabled("KubeletServiceAccountTokenForCredentialProviders"), accounts, a.log.With().Str("component", "credprovider").Logger())
		if err != nil {
			return nil, fmt.Errorf("credential provider plugins: %w", err)
		}
		env.runtime.Opts.CredentialPlugins = plugins
	}
	// The pods' user namespace ranges, read back from their directories:
	// a file that cannot be taken fails the start, as upstream's.
	if env.userns, err = newUserNamespaces(a.deps.RootDir, c); err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	env.runtime.Opts.UserNamespaces = env.userns
	// What was applied to each container, for in-place resizes.
	actuated, err := podruntime.NewActuatedResources(a.deps.RootDir)
	if err != nil {
		a.log.Warn().Err(err).Msg("starting without the containers' actuated resources: running containers are taken to run at their allocation")
	}
	env.runtime.Opts.Actuated = actuated
	env.stats = &stats.Provider{Runtime: a.deps.Runtime, Images: a.deps.Images, NodeName: a.deps.NodeName,
		RootDir: a.deps.RootDir, PodLogsDir: c.PodLogsDir, PodCgroupRoot: env.cgroups.PodsCgroup(),
		CgroupDriver:      env.runtime.Opts.CgroupDriver,
		VolumeStatsPeriod: volumeStatsPeriod(c.VolumeStatsAggPeriod.Duration), CSIDrivers: env.csiDrivers,
		Log: a.log.With().Str("component", "stats").Logger()}
	if env.volumeSources != nil {
		// The claims of the pods' volumes, which name them in the summary.
		env.stats.Claims = env.volumes.Sources
	}
	thresholds, err := evictionpolicy.ParseThresholds(c.EnforceNodeAllocatable, c.EvictionHard, c.EvictionSoft,
		c.EvictionSoftGracePeriod, c.EvictionMinimumReclaim)
	if err != nil {
		return nil, fmt.Errorf("eviction thresholds: %w", err)
	}
	env.eviction = evictionpolicy.Config{Thresholds: thresholds, PressureTransitionPeriod: c.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds: int64(c.EvictionMaxPodGracePeriod)}
	if env.volumeSources != nil {
		// Env and image pull secrets read the same objects as volumes, from
		// the same watches: one cache of the node's objects, not two.
		env.runtime.Opts.Objects = env.volumes.Sources
		// The Services of the whole cluster, for the service variables.
		svcs := services.New(a.deps.Kube)
		go svcs.Run(a.Context())
		env.runtime.Opts.Services = svcs
		// The RuntimeClasses, for the handlers of pods' sandboxes.
		classes := runtimeclass.New(a.deps.Kube)
		classes.Start(a.Context())
		env.runtime.Opts.RuntimeClasses = classes
	}
	return env, nil
}

func (a *Actor) warn(warnings []string) {
	for _, w := range warnings {
		a.log.Warn().Msg(strings.TrimSpace(w))
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// volumeStatsPeriod maps volumeStatsAggPeriod to stats.Provider's: zero or
// less turns volume stats off, as upstream.
func volumeStatsPeriod(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// dedicatedImageFs reports whether the runtime keeps its images on another
// filesystem than rootDir's, as upstream's HasDedicatedImageFs: the
// eviction manager then counts a pod's writable layers against imagefs
// only. Unknown (no answer from the runtime): false, logged. ctx is the
// start-up's, which a signal cancels.
func dedicatedImageFs(ctx context.Context, images runtimeapi.ImageServiceClient, rootDir string, log zerolog.Logger) bool {
	if images == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(resp.GetImageFilesystems()) == 0 || resp.ImageFilesystems[0].GetFsId().GetMountpoint() == "" {
		log.Warn().Err(err).Msg("the runtime's image filesystem is unknown: taken to be the root directory's")
		return false
	}
	var img, root unix.Stat_t
	mp := resp.ImageFilesystems[0].FsId.Mountpoint
	if err := unix.Stat(mp, &img); err != nil {
		log.Warn().Err(err).Str("path", mp).Msg("the runtime's image filesystem is unknown: taken to be the root directory's")
		return false
	}
	if err := unix.Stat(rootDir, &root); err != nil {
		log.Warn().Err(err).Str("path", rootDir).Msg("the root directory's filesystem is unknown")
		return false
	}
	return img.Dev != root.Dev
}

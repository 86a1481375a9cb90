package dependencies

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/certificates"
	"github.com/actorlet/actorlet/internal/tracing"
)

// Dependencies are the node agent's handles on the outside world.
type Dependencies struct {
	RuntimeEndpoint string
	ImageEndpoint   string
	Runtime         runtimeapi.RuntimeServiceClient
	Images          runtimeapi.ImageServiceClient
	RuntimeVersion  *runtimeapi.VersionResponse

	// Kube is nil in standalone mode (no --kubeconfig).
	Kube kubernetes.Interface
	// Heartbeat writes the node lease and the node status, as upstream's
	// heartbeat client: unthrottled, so that no other traffic (TokenReviews
	// for a flood of requests to the kubelet API, pod status writes) can
	// starve the heartbeats. Nil in standalone mode.
	Heartbeat kubernetes.Interface
	Events    record.EventRecorder
	// ClientCertificates rotates the node's client certificate, which the
	// clients above present (rotateCertificates); nil when off.
	ClientCertificates *certificates.Client

	NodeName string
	NodeIP   net.IP
	RootDir  string

	// Tracer is the OpenTelemetry tracer provider (tracing), a no-op
	// one when tracing is not configured. Close flushes it.
	Tracer tracing.Provider

	closers []func()
}

// Input is what Build needs from the configuration.
type Input struct {
	RuntimeEndpoint string
	ImageEndpoint   string // empty: the runtime endpoint
	Kubeconfig      string // empty: standalone mode
	KubeAPIQPS      float32
	KubeAPIBurst    int
	// ContentType is contentType: what requests to the API server are
	// sent in.
	ContentType string
	EventQPS    float32
	EventBurst  int
	// NodeStatusUpdateFrequency and NodeLeaseDuration bound each request of
	// the heartbeat client (the shorter of the two), as upstream.
	NodeStatusUpdateFrequency time.Duration
	NodeLeaseDuration         time.Duration
	HostnameOverride          string
	NodeIP                    string
	RootDir                   string
	OOMScoreAdj               int32

	// RotateCertificates (rotateCertificates) rotates the kubeconfig's
	// client certificate; renewals of an expired one go with
	// BootstrapKubeconfig's credentials when given. The certificates live
	// in CertDir.
	RotateCertificates  bool
	BootstrapKubeconfig string
	CertDir             string

	// Tracing is the configuration's tracing; nil: no spans.
	Tracing *tracingapi.TracingConfiguration
}

// Build connects to the container runtime and image service, the API server
// when a kubeconfig is given, and settles the node's identity. Each error
// names what failed and with which input.
func Build(ctx context.Context, in Input, log zerolog.Logger) (*Dependencies, error) {
	d := &Dependencies{RuntimeEndpoint: in.RuntimeEndpoint, ImageEndpoint: in.ImageEndpoint}
	if d.ImageEndpoint == "" {
		d.ImageEndpoint = d.RuntimeEndpoint
	}
	ok := false
	defer func() {
		if !ok {
			d.Close()
		}
	}()

	// The tracer provider comes first, as upstream's: the runtime's and
	// the API server's clients are instrumented with it. It is closed
	// last, so the spans of everything closed before it are flushed.
	host, err := nodeName(in.HostnameOverride)
	if err != nil {
		return nil, err
	}
	if d.Tracer, err = tracing.NewProvider(ctx, in.Tracing, host); err != nil {
		return nil, fmt.Errorf("could not configure tracer provider: %w", err)
	}
	d.closers = append(d.closers, func() {
		if err := tracing.Shutdown(d.Tracer); err != nil {
			log.Warn().Err(err).Msg("tracing: flushing the last spans failed")
		}
	})

	runtimeConn, version, err := dialRuntime(ctx, d.RuntimeEndpoint, d.Tracer)
	if err != nil {
		return nil, fmt.Errorf("container runtime %s: %w", d.RuntimeEndpoint, err)
	}
	d.closers = append(d.closers, func() { _ = runtimeConn.Close() })
	d.Runtime = runtimeapi.NewRuntimeServiceClient(runtimeConn)
	d.RuntimeVersion = version
	d.Images = runtimeapi.NewImageServiceClient(runtimeConn)
	if d.ImageEndpoint != d.RuntimeEndpoint {
		imageConn, _, err := dialRuntime(ctx, d.ImageEndpoint, d.Tracer)
		if err != nil {
			return nil, fmt.Errorf("image service %s: %w", d.ImageEndpoint, err)
		}
		d.closers = append(d.closers, func() { _ = imageConn.Close() })
		d.Images = runtimeapi.NewImageServiceClient(imageConn)
	}
	log.Info().Str("endpoint", d.RuntimeEndpoint).Str("runtime", version.RuntimeName).
		Str("runtimeVersion", version.RuntimeVersion).Str("criVersion", version.RuntimeApiVersion).Msg("connected to the container runtime")
	logUserNamespaces(ctx, d.Runtime, log)

	if d.NodeName, err = nodeName(in.HostnameOverride); err != nil {
		return nil, err
	}
	if d.NodeIP, err = nodeIP(in.NodeIP); err != nil {
		return nil, err
	}

	// Events have a client of their own, as upstream's eventClient: with
	// their own QPS budget (eventRecordQPS/eventBurst) a burst of pod starts
	// does not hold up the status writes behind its events.
	var eventKube kubernetes.Interface
	if in.Kubeconfig != "" {
		cfg, err := kubeConfig(in.Kubeconfig, in.KubeAPIQPS, in.KubeAPIBurst, in.ContentType)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", in.Kubeconfig, err)
		}
		if cfg, err = d.rotateClientCertificate(in, cfg, log); err != nil {
			return nil, err
		}
		cfg.Wrap(tracing.APIClientWrapper(d.Tracer))
		if d.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", in.Kubeconfig, err)
		}
		if d.Heartbeat, err = kubernetes.NewForConfig(heartbeatConfig(cfg, in.NodeStatusUpdateFrequency, in.NodeLeaseDuration)); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: heartbeat client: %w", in.Kubeconfig, err)
		}
		if eventKube, err = kubernetes.NewForConfig(eventConfig(cfg, in.EventQPS, in.EventBurst)); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: events client: %w", in.Kubeconfig, err)
		}
	} else {
		log.Info().Msg("no --kubeconfig: standalone mode, pods come from static sources only")
	}
	var stop func()
	d.Events, stop = eventRecorder(eventKube, d.NodeName, in.EventQPS, in.EventBurst, log)
	d.closers = append(d.closers, stop)

	if d.RootDir, err = rootDir(in.RootDir); err != nil {
		return nil, err
	}
	adjustOOMScore(in.OOMScoreAdj, log)
	ok = true
	return d, nil
}

// rotateClientCertificate starts the rotation of the kubeconfig's client
// certificate with rotateCertificates, as upstream's buildKubeletClientConfig
// does, and returns the configuration of the node's clients: cfg's settings
// with a transport that presents the current certificate. A kubeconfig
// that authenticates otherwise (a token) has no certificate to rotate:
// upstream would drop its credentials there; actorlet keeps them and says
// so.
func (d *Dependencies) rotateClientCertificate(in Input, cfg *rest.Config, log zerolog.Logger) (*rest.Config, error) {
	if !in.RotateCertificates {
		return cfg, nil
	}
	if !certificates.HasClientCertificate(cfg) {
		log.Warn().Str("kubeconfig", in.Kubeconfig).Msg("rotateCertificates: the kubeconfig authenticates without a client certificate; there is nothing to rotate")
		return cfg, nil
	}
	cc, err := certificates.NewClient(certificates.ClientConfig{Kubeconfig: in.Kubeconfig, BootstrapKubeconfig: in.BootstrapKubeconfig,
		CertDir: in.CertDir, NodeName: d.NodeName, Log: log})
	if err != nil {
		return nil, fmt.Errorf("rotateCertificates: %w", err)
	}
	cc.Start()
	d.closers = append(d.closers, cc.Stop)
	d.ClientCertificates = cc
	rotating := cc.Config()
	rotating.QPS, rotating.Burst, rotating.UserAgent = cfg.QPS, cfg.Burst, cfg.UserAgent
	rotating.ContentType, rotating.AcceptContentTypes = cfg.ContentType, cfg.AcceptContentTypes
	log.Info().Str("certDir", in.CertDir).Msg("client certificate rotation is on")
	return rotating, nil
}

// Close releases the connections, in reverse order of creation.
func (d *Dependencies) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

// PluginsRegistrationDir is where kubelet plugins put their registration
// sockets, ROOT/plugins_registry, as upstream's.
func PluginsRegistrationDir(root string) string { return filepath.Join(root, "plugins_registry") }

// PluginsDir is where kubelet plugins keep their own sockets and files,
// ROOT/plugins, as upstream's.
func PluginsDir(root string) string { return filepath.Join(root, "plugins") }

// rootDir creates the root directory and its pods and plugins
// directories, as upstream's setupDataDirs does.
func rootDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("root directory %q: %w", dir, err)
	}
	for _, d := range []string{abs, filepath.Join(abs, "pods"), PluginsDir(abs), PluginsRegistrationDir(abs)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return "", fmt.Errorf("root directory: %w", err)
		}
	}
	return abs, nil
}

// adjustOOMScore sets the agent's own oom_score_adj. Where the kernel denies
// it (no CAP_SYS_RESOURCE for a negative value), upstream logs and goes on;
// so does actorlet.
func adjustOOMScore(score int32, log zerolog.Logger) {
	path := "/proc/self/oom_score_adj"
	if err := os.WriteFile(path, []byte(strconv.Itoa(int(score))), 0o644); err != nil {
		log.Warn().Err(err).Int32("oomScoreAdj", score).Msg("could not set the agent's oom_score_adj; going on")
	}
}

// eventSource is the component name events carry, as upstream's.
var eventSource = corev1.EventSource{Component: "kubelet"}

// logUserNamespaces says at start-up whether the runtime's default handler
// supports user namespaces. The runtime is asked again for each pod with
// hostUsers: false (podruntime.UserNamespaceSupport); this tells the
// operator before the first such pod comes whether it can run.
func logUserNamespaces(ctx context.Context, rt runtimeapi.RuntimeServiceClient, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		log.Warn().Err(err).Msg("could not read the container runtime's status")
		return
	}
	supported := false
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			supported = h.GetFeatures().GetUserNamespaces()
		}
	}
	if !supported {
		log.Info().Msg("the container runtime does not support user namespaces: pods with hostUsers: false will not start")
		return
	}
	log.Info().Msg("the container runtime supports user namespaces: pods with hostUsers: false run in user namespaces of their own")
}

// Package probe runs a container's probes, one at a time, as upstream's
// pkg/kubelet/prober/prober.go and pkg/probe/{exec,http,tcp,grpc}: it
// turns a probe spec into one verdict and upstream's events. It is I/O
// only: when to probe, thresholds and what a result changes are the prober
// actor's and the pod-worker's.
package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/probe/action"
	"github.com/actorlet/actorlet/internal/probe/results"
)

// Event reasons of probes, as upstream's.
const (
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
)

// maxRetries is how many times a probe runs when it errors (cannot run at
// all, as opposed to failing), as upstream.
const maxRetries = 3

// outcome is one run's verdict, as upstream's probe.Result; its text is
// what upstream's "errored" event names.
type outcome string

const (
	success outcome = "success"
	warning outcome = "warning" // a success with something to tell
	failure outcome = "failure"
	unknown outcome = "unknown"
)

// Runner runs single probes, as upstream's prober.probe: the probe of kind for container c.
type Runner struct {
	RT       runtimeapi.RuntimeServiceClient // ExecSync for exec probes
	Recorder record.EventRecorder            // nil: no events
	// RequestTimeout is the node's runtimeRequestTimeout: how long past
	// an exec probe's timeoutSeconds its ExecSync waits for the runtime,
	// as upstream's CRI client (0: action.DefaultExecSlack).
	RequestTimeout time.Duration
}

// Probe runs c's probe of kind once (with its timeoutSeconds, and upstream's retries on error) against the
// container instance containerID (no prefix) of pod, whose current status is podStatus (for the pod IP).
// It records upstream's events (Warning "Unhealthy" "<Kind> probe failed: <output>" / "<Kind> probe errored: ..."
// and "ProbeWarning") on the container's field path, and returns Success or Failure (an error is Failure
// with the error, as upstream counts it).
//
// A container without a probe of kind is a Success, as upstream. A probe
// cut short by ctx is a Failure with ctx's error and records no event.
func (r *Runner) Probe(ctx context.Context, kind results.Kind, pod *v1.Pod, podStatus v1.PodStatus, c *v1.Container, containerID string) (results.Result, error) {
	var spec *v1.Probe
	switch kind {
	case results.Liveness:
		spec = c.LivenessProbe
	case results.Readiness:
		spec = c.ReadinessProbe
	case results.Startup:
		spec = c.StartupProbe
	default:
		return results.Failure, fmt.Errorf("unknown probe type: %q", kind)
	}
	if spec == nil {
		return results.Success, nil
	}
	var (
		res outcome
		out string
		err error
	)
	for range maxRetries {
		res, out, err = r.run(ctx, spec, pod, podStatus, c, containerID)
		if ctx.Err() != nil {
			// The caller stopped the probe (the container is going): what
			// the cut-short run found says nothing about the container.
			return results.Failure, ctx.Err()
		}
		if err == nil {
			break
		}
	}
	if err != nil {
		r.event(pod, c, events.ContainerUnhealthy, fmt.Sprintf("%s probe errored and resulted in %s state: %s", kind, res, err))
		return results.Failure, err
	}
	switch res {
	case success:
		return results.Success, nil
	case warning:
		r.event(pod, c, events.ContainerProbeWarning, fmt.Sprintf("%s probe warning: %s", kind, out))
		return results.Success, nil
	case failure:
		r.event(pod, c, events.ContainerUnhealthy, fmt.Sprintf("%s probe failed: %s", kind, out))
	}
	return results.Failure, nil
}

// run runs the probe once.
func (r *Runner) run(ctx context.Context, p *v1.Probe, pod *v1.Pod, status v1.PodStatus, c *v1.Container, containerID string) (outcome, string, error) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	switch {
	case p.Exec != nil:
		return r.exec(ctx, containerID, expandStatic(p.Exec.Command, c.Env), timeout)
	case p.HTTPGet != nil:
		req, err := action.NewHTTPGetRequest(ctx, p.HTTPGet, c, status.PodIP, "probe")
		if err != nil {
			return unknown, "", err
		}
		return probeHTTP(req, timeout)
	case p.TCPSocket != nil:
		port, err := action.ResolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return unknown, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = status.PodIP
		}
		return probeTCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return probeGRPC(ctx, status.PodIP, service, int(p.GRPC.Port), timeout)
	}
	return unknown, "", fmt.Errorf("missing probe handler for %s:%s", podref.Desc(pod), c.Name)
}

// exec runs an exec probe: exit 0 is a success, another exit code a
// failure with the command's output, a timeout a failure with upstream's
// text; the runtime failing to run it is an error.
func (r *Runner) exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (outcome, string, error) {
	out, err := action.Exec(ctx, r.RT, id, cmd, timeout, r.RequestTimeout)
	if len(out) > action.MaxBodyLength {
		out = out[:action.MaxBodyLength]
	}
	var exit *action.ExitError
	switch {
	case err == nil:
		return success, string(out), nil
	case errors.As(err, &exit):
		return failure, string(out), nil
	case errors.Is(err, action.ErrCommandTimedOut):
		return failure, err.Error(), nil
	}
	return unknown, "", err
}

// httpTransport is upstream's probe transport: no TLS verification (the
// kubelet cannot verify a pod's certificate), no proxy, no keep-alive (a
// probe is one request), no compression, and lingerless sockets.
var httpTransport = &http.Transport{
	TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
	Proxy:               http.ProxyURL(nil),
	DisableKeepAlives:   true,
	DisableCompression:  true,
	DialContext:         action.Dialer().DialContext,
	TLSHandshakeTimeout: 10 * time.Second,
	ForceAttemptHTTP2:   true,
}

// probeHTTP sends req: a 2xx answer is a success, a 3xx one (a redirect
// to another host, which probes do not follow) a success with a warning,
// any other status or a request that fails a failure.
func probeHTTP(req *http.Request, timeout time.Duration) (outcome, string, error) {
	client := &http.Client{Timeout: timeout, Transport: httpTransport, CheckRedirect: action.SameHostRedirects}
	resp, err := client.Do(req)
	if err != nil {
		return failure, err.Error(), nil
	}
	defer resp.Body.Close()
	// A body longer than the limit is cut, not an error.
	b, err := io.ReadAll(io.LimitReader(resp.Body, action.MaxBodyLength))
	if err != nil {
		return failure, "", err
	}
	switch {
	case resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusMultipleChoices:
		return success, string(b), nil
	case resp.StatusCode >= http.StatusMultipleChoices && resp.StatusCode < http.StatusBadRequest:
		return warning, fmt.Sprintf("Probe terminated redirects, Response body: %v", string(b)), nil
	}
	// As upstream, the text leaves the body out: it may hold secrets.
	return failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
}

// probeTCP is a success when a connection to addr opens within timeout.
func probeTCP(ctx context.Context, addr string, timeout time.Duration) (outcome, string, error) {
	d := action.Dialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return failure, err.Error(), nil
	}
	_ = conn.Close()
	return success, "", nil
}

// event records a Warning on the container, if there is a recorder.
func (r *Runner) event(pod *v1.Pod, c *v1.Container, reason, message string) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Event(&v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1",
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		FieldPath: podref.FieldPath(pod, c.Name),
	}, v1.EventTypeWarning, reason, message)
}

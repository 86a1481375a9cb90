// Package lifecycle runs a container's lifecycle hook handlers (postStart,
// preStop), as upstream's pkg/kubelet/lifecycle/handlers.go: an exec
// command through the CRI, an HTTP GET to the pod, or a sleep. It is I/O
// only: the caller decides when a hook runs, how long it may take (its
// context) and what a failure does to the container.
package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/probe/action"
)

// Event reasons and messages of a failed hook, as upstream records them on
// the container: the message leaves out the handler's output so that
// secrets it may print do not reach the API server. The output Run returns
// goes to the logs and to the container's waiting message instead.
const (
	ReasonFailedPostStartHook  = "FailedPostStartHook"
	ReasonFailedPreStopHook    = "FailedPreStopHook"
	MessageFailedPostStartHook = "PostStartHook failed"
	MessageFailedPreStopHook   = "PreStopHook failed"
	// ErrPostStartHookReason is the waiting reason (and the sync error) of
	// a container whose postStart hook failed, as upstream's ErrPostStartHook.
	ErrPostStartHookReason = "PostStartHookError"
	// ReasonLifecycleHTTPFallback is the pod's Warning event when an HTTPS
	// hook got a plain HTTP answer and the retry over HTTP succeeded.
	ReasonLifecycleHTTPFallback = "LifecycleHTTPFallback"
)

// Runner runs a container's lifecycle hook handlers (postStart, preStop).
type Runner struct {
	RT runtimeapi.RuntimeServiceClient // ExecSync for exec handlers
	// HTTPClient for httpGet handlers; nil: a default like upstream's.
	HTTPClient *http.Client
	// Recorder, when not nil, records upstream's LifecycleHTTPFallback
	// event on the pod.
	Recorder record.EventRecorder
}

// defaultClient is upstream's client for lifecycle hooks: it skips TLS
// verification because the kubelet cannot verify a pod's certificate, goes
// through no proxy, follows redirects only to the same host, and carries
// no credentials, which must never leak to arbitrary hosts.
var defaultClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		Proxy:             http.ProxyURL(nil),
		DisableKeepAlives: true,
	},
	CheckRedirect: action.SameHostRedirects,
}

// Run runs handler h of container c (runtime instance containerID, no "containerd://" prefix) of pod,
// whose IP is podIP (the default host of httpGet). It returns the handler's output for the event message
// and an error as upstream's handlers do. ctx bounds it (the caller sets the grace period).
//
// On failure the string is upstream's message, such as `Exec lifecycle
// hook ([sh -c exit 1]) for Container "c" in Pod "p_ns(uid)" failed -
// error: ..., message: "..."` (the command's output), for the logs and the
// container's waiting message; it is "" on success. exec fails on a
// non-zero exit or a runtime error; httpGet, as upstream, only when the
// request does (connection error, unknown port, too many redirects), not
// on a response's status code; sleep when ctx ends first. An error with
// ctx ended is the hook cut short by its caller: upstream, whose preStop
// hook goes on unobserved past the grace period, records no
// FailedPreStopHook event for it.
func (r *Runner) Run(ctx context.Context, pod *v1.Pod, podIP, containerID string, c *v1.Container, h *v1.LifecycleHandler) (string, error) {
	switch {
	case h == nil:
		err := errors.New("invalid handler: <nil>")
		return "Cannot run handler: " + err.Error(), err
	case h.Exec != nil:
		out, err := action.Exec(ctx, r.RT, containerID, h.Exec.Command, 0, 0)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podref.Desc(pod), err, string(out)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := r.runHTTP(ctx, pod, podIP, c, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podref.Desc(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := sleep(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podref.Desc(pod), err), err
		}
		return "", nil
	default:
		err := fmt.Errorf("invalid handler: %v", h)
		return "Cannot run handler: " + err.Error(), err
	}
}

// sleep is the Sleep action: it waits seconds (0 returns at once) unless
// ctx ends first, which upstream reports as the container terminating and
// counts in kubelet_sleep_action_terminated_early_total.
func sleep(ctx context.Context, seconds int64) error {
	if seconds <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		metrics.SleepActionTerminatedEarly.Inc()
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}

// runHTTP sends the hook's GET and discards the answer. As upstream, an
// HTTPS request answered in plain HTTP is retried over HTTP without the
// Authorization header, and a successful retry is a warning event.
func (r *Runner) runHTTP(ctx context.Context, pod *v1.Pod, podIP string, c *v1.Container, g *v1.HTTPGetAction) error {
	if g.Host == "" && podIP == "" {
		return errors.New("failed to find networking container: the pod has no IP")
	}
	client := r.HTTPClient
	if client == nil {
		client = defaultClient
	}
	req, err := action.NewHTTPGetRequest(ctx, g, c, podIP, "lifecycle")
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	discard(resp)
	if !isHTTPResponseError(err) {
		return err
	}
	retry := req.Clone(ctx)
	retry.URL.Scheme = "http"
	retry.Header.Del("Authorization")
	resp, retryErr := client.Do(retry)
	discard(resp)
	if retryErr != nil {
		return err
	}
	metrics.LifecycleHandlerHTTPFallbacks.Inc()
	if r.Recorder != nil {
		r.Recorder.Event(podRef(pod), v1.EventTypeWarning, events.LifecycleHTTPFallback,
			fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host))
	}
	return nil
}

// discard reads a bounded part of the body and closes it.
func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= action.MaxBodyLength {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, action.MaxBodyLength))
	}
}

// isHTTPResponseError tells an HTTPS request that a plain HTTP server
// answered.
func isHTTPResponseError(err error) bool {
	var urlErr *url.Error
	if err == nil || !errors.As(err, &urlErr) {
		return false
	}
	return strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

func podRef(pod *v1.Pod) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1",
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}
}

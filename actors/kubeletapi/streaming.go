package kubeletapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/actorlet/actorlet/internal/podref"
)

// The streaming endpoints (/exec, /attach, /portForward) do what upstream's
// do with a CRI runtime that serves its own streams: ask the runtime for a
// one-time URL on its streaming server (containerd's listens on loopback)
// and proxy the upgraded SPDY connection there. The API server translates
// kubectl's WebSockets to SPDY before it reaches us, because actorlet does
// not declare the ExtendWebSocketsToKubelet node feature.

// streamOptions are the remotecommand query parameters, as upstream's
// remotecommand.NewOptions reads them.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

func parseStreamOptions(q url.Values) (streamOptions, error) {
	on := func(name string) bool { v := q.Get(name); return v == "1" || v == "true" }
	o := streamOptions{stdin: on("input"), stdout: on("output"), stderr: on("error"), tty: on("tty")}
	if o.tty && o.stderr {
		// A terminal has one output stream; upstream drops stderr too.
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, fmt.Errorf("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// execPath splits NS/POD[/UID]/CONTAINER, the rest of an /exec/, /attach/
// or /run/ path.
func execPath(rest string) (namespace, pod string, uid types.UID, container string, err error) {
	parts := pathSegments(rest)
	switch len(parts) {
	case 3:
		if err := emptySegment(rest, parts, "namespace", "pod name", "container name"); err != nil {
			return "", "", "", "", err
		}
		return parts[0], parts[1], "", parts[2], nil
	case 4:
		if err := emptySegment(rest, parts, "namespace", "pod name", "pod UID", "container name"); err != nil {
			return "", "", "", "", err
		}
		return parts[0], parts[1], types.UID(parts[2]), parts[3], nil
	}
	return "", "", "", "", fmt.Errorf("path %q: want NAMESPACE/POD[/UID]/CONTAINER", rest)
}

// portForwardPath splits NS/POD[/UID], the rest of a /portForward/ path.
func portForwardPath(rest string) (namespace, pod string, uid types.UID, err error) {
	parts := pathSegments(rest)
	switch len(parts) {
	case 2:
		if err := emptySegment("/portForward/"+rest, parts, "namespace", "pod name"); err != nil {
			return "", "", "", err
		}
		return parts[0], parts[1], "", nil
	case 3:
		if err := emptySegment("/portForward/"+rest, parts, "namespace", "pod name", "pod UID"); err != nil {
			return "", "", "", err
		}
		return parts[0], parts[1], types.UID(parts[2]), nil
	}
	return "", "", "", fmt.Errorf("path %q: want /portForward/NAMESPACE/POD[/UID]", "/portForward/"+rest)
}

// containerLogsPath splits NS/POD/CONTAINER, the rest of a /containerLogs/
// path. Upstream needs the container named, even for a pod with one.
func containerLogsPath(rest string) (namespace, pod, container string, err error) {
	parts := pathSegments(rest)
	switch {
	case len(parts) == 3:
		if err := emptySegment("/containerLogs/"+rest, parts, "namespace", "pod name", "container name"); err != nil {
			return "", "", "", err
		}
		return parts[0], parts[1], parts[2], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return "", "", "", fmt.Errorf("missing container name in %q: want /containerLogs/NAMESPACE/POD/CONTAINER", "/containerLogs/"+rest)
	}
	return "", "", "", fmt.Errorf("path %q: want /containerLogs/NAMESPACE/POD/CONTAINER", "/containerLogs/"+rest)
}

// pathSegments splits the rest of a path after its endpoint's prefix; a
// trailing slash is not a segment.
func pathSegments(rest string) []string {
	return strings.Split(strings.Trim(rest, "/"), "/")
}

// emptySegment names the first empty segment of parts (two slashes in a
// row), whose meanings are names, in an error quoting path; nil when there
// is none.
func emptySegment(path string, parts []string, names ...string) error {
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("path %q: the %s is empty", path, names[i])
		}
	}
	return nil
}

// execCommand is the command of an /exec/ request: one ?command= per
// argument, as the API server writes them.
func execCommand(q url.Values) ([]string, error) {
	cmd := q["command"]
	if len(cmd) == 0 {
		return nil, statusError(http.StatusBadRequest, "exec: missing query parameter command")
	}
	return cmd, nil
}

// runCommand is the command of a /run/ request: ?cmd= split at white
// space, as upstream's.
func runCommand(q url.Values) ([]string, error) {
	cmd := strings.Fields(q.Get("cmd"))
	if len(cmd) == 0 {
		return nil, errors.New("run: missing query parameter cmd")
	}
	return cmd, nil
}

func (a *Actor) exec(w http.ResponseWriter, r *http.Request) {
	a.streamContainer(w, r, "/exec/", func(_ *v1.Pod, c *runtimeapi.Container, o streamOptions) (string, error) {
		cmd, err := execCommand(r.URL.Query())
		if err != nil {
			return "", err
		}
		resp, err := a.p.Runtime.Exec(r.Context(), &runtimeapi.ExecRequest{ContainerId: c.Id, Cmd: cmd,
			Tty: o.tty, Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr})
		if err != nil {
			return "", err
		}
		return resp.Url, nil
	})
}

func (a *Actor) attach(w http.ResponseWriter, r *http.Request) {
	a.streamContainer(w, r, "/attach/", func(pod *v1.Pod, c *runtimeapi.Container, o streamOptions) (string, error) {
		// The terminal setting must be the container's own: whether its
		// process runs on a terminal was fixed when it started.
		resp, err := a.p.Runtime.Attach(r.Context(), &runtimeapi.AttachRequest{ContainerId: c.Id,
			Tty: containerTTY(pod, c.Metadata.GetName()), Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr})
		if err != nil {
			return "", err
		}
		return resp.Url, nil
	})
}

func containerTTY(pod *v1.Pod, name string) bool {
	c := podref.Container(pod, name)
	return c != nil && c.TTY
}

func (a *Actor) streamContainer(w http.ResponseWriter, r *http.Request, prefix string,
	streamURL func(*v1.Pod, *runtimeapi.Container, streamOptions) (string, error)) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, fmt.Sprintf("method not allowed: %s takes GET or POST", prefix), http.StatusMethodNotAllowed)
		return
	}
	ns, name, uid, container, err := execPath(strings.TrimPrefix(r.URL.Path, prefix))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, c, err := a.runningPodContainer(r, ns, name, uid, container)
	if err != nil {
		writeError(w, err)
		return
	}
	if !requireUpgrade(w, r) {
		return
	}
	raw, err := streamURL(pod, c, opts)
	if err != nil {
		writeStreamError(w, err)
		return
	}
	a.proxyStream(w, r, raw)
}

// runningPodContainer finds the pod and its running container a request
// names.
func (a *Actor) runningPodContainer(r *http.Request, ns, name string, uid types.UID, container string) (*v1.Pod, *runtimeapi.Container, error) {
	pod, err := a.podByName(r.Context(), ns, name, uid, container)
	if err != nil {
		return nil, nil, err
	}
	c, err := a.runningContainer(r.Context(), pod, container)
	if err != nil {
		return nil, nil, err
	}
	return pod, c, nil
}

func (a *Actor) portForward(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed: /portForward/ takes GET or POST", http.StatusMethodNotAllowed)
		return
	}
	ns, name, uid, err := portForwardPath(strings.TrimPrefix(r.URL.Path, "/portForward/"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, err := a.podByName(r.Context(), ns, name, uid, "")
	if err != nil {
		writeError(w, err)
		return
	}
	sandbox, err := a.readySandbox(r.Context(), pod)
	if err != nil {
		writeError(w, err)
		return
	}
	if !requireUpgrade(w, r) {
		return
	}
	// With SPDY the ports travel in each stream's headers, so the request
	// names none.
	resp, err := a.p.Runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox})
	if err != nil {
		writeStreamError(w, err)
		return
	}
	a.proxyStream(w, r, resp.Url)
}

func (a *Actor) proxyStream(w http.ResponseWriter, r *http.Request, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		http.Error(w, fmt.Sprintf("runtime returned a bad streaming URL %q: %v", raw, err), http.StatusInternalServerError)
		return
	}
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, streamResponder{a})
	h.ServeHTTP(w, r)
}

type streamResponder struct{ a *Actor }

func (s streamResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	s.a.log.Warn().Err(err).Str("path", r.URL.Path).Msg("proxy a stream to the runtime")
	code := http.StatusInternalServerError
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		code = int(st.Status().Code)
	}
	http.Error(w, err.Error(), code)
}

// requireUpgrade answers a request that does not ask to upgrade the
// connection with 400 before the runtime is asked for anything: the
// streaming endpoints speak nothing else.
func requireUpgrade(w http.ResponseWriter, r *http.Request) bool {
	if httpstream.IsUpgradeRequest(r) {
		return true
	}
	http.Error(w, fmt.Sprintf("%s: upgrade request required (SPDY or WebSocket streaming, as kubectl and kube-apiserver send)", r.URL.Path), http.StatusBadRequest)
	return false
}

// writeStreamError answers a CRI error with the HTTP status upstream's
// streaming.WriteError gives its gRPC code.
func writeStreamError(w http.ResponseWriter, err error) {
	st, _ := status.FromError(err)
	code := http.StatusInternalServerError
	switch st.Code() {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		// Upstream tells clients to retry; so do we.
		w.Header().Set("Retry-After", "1")
		code = http.StatusTooManyRequests
	case codes.InvalidArgument:
		code = http.StatusBadRequest
	case codes.Unimplemented:
		code = http.StatusNotImplemented
	}
	if he, ok := err.(*httpError); ok {
		code = he.status
	}
	http.Error(w, err.Error(), code)
}

// run executes ?cmd= in a container and answers its output, as upstream's
// /run: the legacy, non-streaming form of exec.
func (a *Actor) run(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed: /run/ takes POST", http.StatusMethodNotAllowed)
		return
	}
	ns, name, uid, container, err := execPath(strings.TrimPrefix(r.URL.Path, "/run/"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd, err := runCommand(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, c, err := a.runningPodContainer(r, ns, name, uid, container)
	if err != nil {
		writeError(w, err)
		return
	}
	resp, err := a.p.Runtime.ExecSync(r.Context(), &runtimeapi.ExecSyncRequest{ContainerId: c.Id, Cmd: cmd})
	if err != nil {
		http.Error(w, fmt.Sprintf("run %q in %s/%s/%s: %v", cmd, ns, name, container, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// Upstream answers the combined output as the body, exit code aside.
	out := append(resp.Stdout, resp.Stderr...)
	if resp.ExitCode != 0 {
		a.log.Debug().Int32("exit", resp.ExitCode).Strs("cmd", cmd).Msg("/run command exited non-zero")
	}
	_, _ = w.Write(out)
}

// jsonResponse writes v as JSON.
func (a *Actor) jsonResponse(w http.ResponseWriter, what string, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		a.log.Warn().Err(err).Msg("write " + what)
	}
}

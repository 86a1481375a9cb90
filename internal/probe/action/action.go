// Package action runs the handler actions that container probes and
// lifecycle hooks share, as upstream's pkg/probe and its helpers: resolving
// a container port, building an httpGet request, dialing without lingering
// sockets, and running a command in a container through the CRI's ExecSync
// with the CRI client's error conventions. It holds no state; the prober
// and lifecycle packages decide what a result means.
package action

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/version"
)

// MaxBodyLength is how much of a response body, or of a command's output,
// a probe or hook reads, as upstream.
const MaxBodyLength = 10 << 10

// ResolvePort returns the port number param names: a number, or the name
// of one of c's ports. A port outside 1-65535 is an error.
func ResolvePort(param intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	switch param.Type {
	case intstr.Int:
		port = param.IntValue()
	case intstr.String:
		found := false
		for _, p := range c.Ports {
			if p.Name == param.StrVal {
				port, found = int(p.ContainerPort), true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("port %q not found", param.StrVal)
		}
	default:
		return port, fmt.Errorf("intOrString had no kind: %+v", param)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}

// UserAgent is upstream's user agent for purpose ("probe", "lifecycle"):
// kube-PURPOSE/MAJOR.MINOR of the kubelet version actorlet is compatible
// with, which upstream takes from its build.
func UserAgent(purpose string) string {
	return "kube-" + purpose + "/" + kubeletMajorMinor()
}

func kubeletMajorMinor() string {
	v, err := utilversion.ParseGeneric(version.KubeletCompatible)
	if err != nil {
		return "0.0"
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// NewHTTPGetRequest returns the GET request of g for container c, as
// upstream's NewRequestForHTTPGetAction: scheme HTTP unless HTTPS, host g's
// or else podIP, the port resolved from c, g's path and headers; a Host
// header sets the request's host, User-Agent defaults to
// kube-PURPOSE/MAJOR.MINOR and Accept to */* (an empty Accept removes it).
func NewHTTPGetRequest(ctx context.Context, g *v1.HTTPGetAction, c *v1.Container, podIP, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		// As upstream: too late to reject the path, pass it along as is.
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for _, h := range g.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", UserAgent(purpose))
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// Dialer returns a dialer whose sockets linger one second on close instead
// of staying in TIME-WAIT, as upstream's ProbeDialer: frequent probes would
// otherwise exhaust the node's ephemeral ports.
func Dialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}

// ErrCommandTimedOut is what Exec's error wraps when the command did not
// finish within its timeout, as the CRI client's.
var ErrCommandTimedOut = errors.New("command timed out")

// ExitError is a command that ran and exited non-zero, as the CRI client
// reports it.
type ExitError struct {
	Cmd    []string
	Code   int
	Stderr []byte
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.Cmd, " "), e.Code, e.Stderr)
}

// DefaultExecSlack is how long past a command's timeout Exec waits for the
// runtime to answer when its caller says nothing: the CRI client's default
// request timeout (runtimeRequestTimeout).
const DefaultExecSlack = 2 * time.Minute

// Exec runs cmd in the container id through ExecSync and returns its
// stdout followed by its stderr, as upstream's RunInContainer. The runtime
// enforces timeout itself; the call waits slack (the node's
// runtimeRequestTimeout, DefaultExecSlack when 0) past it for the runtime
// to answer, as upstream's CRI client. timeout 0 is none (ctx alone bounds
// the call). A non-zero exit is an *ExitError along with the output; a
// timeout wraps ErrCommandTimedOut; any other error is the runtime's.
func Exec(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, cmd []string, timeout, slack time.Duration) ([]byte, error) {
	var cancel context.CancelFunc
	if timeout > 0 {
		if slack <= 0 {
			slack = DefaultExecSlack
		}
		ctx, cancel = context.WithTimeout(ctx, timeout+slack)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	resp, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: id,
		Cmd:         cmd,
		Timeout:     int64(timeout.Seconds()),
	})
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded {
			return nil, fmt.Errorf("%w: %q timed out after %s", ErrCommandTimedOut, strings.Join(cmd, " "), timeout)
		}
		return nil, err
	}
	out := append(resp.Stdout, resp.Stderr...)
	if resp.ExitCode != 0 {
		return out, &ExitError{Cmd: cmd, Code: int(resp.ExitCode), Stderr: resp.Stderr}
	}
	return out, nil
}

// SameHostRedirects follows up to 10 redirects to the same host and stops,
// without an error, at one to another host, as upstream's RedirectChecker:
// probes and hooks follow redirects alike.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

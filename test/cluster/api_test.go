package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/test/agent"
)

// The kubelet API end to end: kube-apiserver proxies kubectl's logs, exec
// and port-forward to actorlet's port, authenticated with its
// kubelet-client certificate and authorized by SubjectAccessReview, as in
// any cluster. The client side is client-go's remotecommand and
// portforward, the code kubectl runs, and once kubectl itself.

// streamingPod logs a line a second and serves /index.html on 8080.
const streamingScript = `mkdir -p /www && echo pf-ok > /www/index.html && httpd -p 8080 -h /www
echo hello-from-actorlet; i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done`

func TestKubeletAPIThroughTheAPIServer(t *testing.T) {
	n := startClusterNode(t, onPodNetwork())
	ns := n.Namespace("api")
	n.create(n.apiPod(ns, "stream", streamingScript, 1, v1.RestartPolicyAlways))
	eventually(t, "pod Running", 60*time.Second, n.inPhase(ns, "stream", v1.PodRunning))
	cfg := n.Env.AdminRESTConfig(t)

	t.Run("logs", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, err := n.Admin.CoreV1().Pods(ns).GetLogs("stream", &v1.PodLogOptions{Container: "c", Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatalf("logs -f: %v", err)
		}
		defer rc.Close()
		// Following: lines written after the request started arrive.
		sc := bufio.NewScanner(rc)
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
			if strings.HasPrefix(sc.Text(), "tick ") && len(got) >= 4 {
				break
			}
		}
		if len(got) < 4 || got[0] != "hello-from-actorlet" {
			t.Fatalf("followed log %q (err %v)", got, sc.Err())
		}
		tail := int64(1)
		raw, err := n.Admin.CoreV1().Pods(ns).GetLogs("stream", &v1.PodLogOptions{Container: "c", TailLines: &tail, Timestamps: true}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs --tail 1 --timestamps: %v", err)
		}
		line := strings.TrimSpace(string(raw))
		ts, rest, _ := strings.Cut(line, " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasPrefix(rest, "tick ") || strings.Count(line, "\n") != 0 {
			t.Errorf("logs --tail 1 --timestamps = %q", raw)
		}
	})

	t.Run("exec", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		execIn(t, cfg, n, ns, "stream", []string{"sh", "-c", "echo $((6*7)); echo oops >&2"}, nil, false, &stdout, &stderr)
		if stdout.String() != "42\n" || stderr.String() != "oops\n" {
			t.Errorf("exec: stdout %q stderr %q", stdout.String(), stderr.String())
		}
	})

	t.Run("exec -it", func(t *testing.T) {
		// As a person at a terminal: type a command, wait for its output,
		// then leave. (Closing a terminal's input at once ends the shell
		// before it reads anything, with upstream's kubelet too.)
		stdinR, stdinW := io.Pipe()
		stdout := &watchWriter{want: "inside-2", seen: make(chan struct{})}
		go func() {
			_, _ = io.WriteString(stdinW, "echo inside-$((1+1))\n")
			select {
			case <-stdout.seen:
			case <-time.After(20 * time.Second):
			}
			_, _ = io.WriteString(stdinW, "exit\n")
		}()
		execIn(t, cfg, n, ns, "stream", []string{"sh"}, stdinR, true, stdout, nil)
		stdinW.Close()
		if !strings.Contains(stdout.String(), "inside-2") {
			t.Errorf("interactive shell printed %q", stdout.String())
		}
	})

	t.Run("kubectl exec and logs", func(t *testing.T) {
		out, err := exec.Command(n.Env.Kubectl, "--kubeconfig", n.Env.AdminKubeconfig, "-n", ns,
			"exec", "stream", "--", "cat", "/www/index.html").CombinedOutput()
		if err != nil || string(out) != "pf-ok\n" {
			t.Errorf("kubectl exec: %v: %q", err, out)
		}
		out, err = exec.Command(n.Env.Kubectl, "--kubeconfig", n.Env.AdminKubeconfig, "-n", ns,
			"logs", "stream", "--tail", "2").CombinedOutput()
		if err != nil || strings.Count(string(out), "tick ") != 2 {
			t.Errorf("kubectl logs --tail 2: %v: %q", err, out)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		body := portForwardGet(t, cfg, n, ns, "stream", 8080, "/index.html")
		if body != "pf-ok\n" {
			t.Errorf("GET through port-forward = %q", body)
		}
	})

	t.Run("stats summary", func(t *testing.T) {
		var summary statsapi.Summary
		raw := nodeProxy(t, n, "stats/summary")
		if err := json.Unmarshal(raw, &summary); err != nil {
			t.Fatalf("decode /stats/summary: %v\n%s", err, raw)
		}
		if summary.Node.NodeName != n.Name || summary.Node.CPU == nil || summary.Node.Memory == nil {
			t.Errorf("node stats %+v", summary.Node)
		}
		found := false
		for _, p := range summary.Pods {
			if p.PodRef.Namespace == ns && p.PodRef.Name == "stream" {
				found = len(p.Containers) == 1 && p.Containers[0].Memory != nil && p.Containers[0].Memory.WorkingSetBytes != nil
			}
		}
		if !found {
			t.Errorf("pod %s/stream missing or without container memory in %s", ns, raw)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		families := parseMetrics(t, nodeProxy(t, n, "metrics"))
		for _, name := range []string{"kubelet_running_pods", "kubelet_running_containers", "kubelet_node_name",
			"kubelet_pleg_relist_duration_seconds", "kubelet_runtime_operations_total"} {
			if _, ok := families[name]; !ok {
				t.Errorf("/metrics has no %s", name)
			}
		}
		resource := parseMetrics(t, nodeProxy(t, n, "metrics/resource"))
		if _, ok := resource["container_memory_working_set_bytes"]; !ok {
			t.Errorf("/metrics/resource has no container_memory_working_set_bytes")
		}
	})

	t.Run("configz", func(t *testing.T) {
		var cz struct {
			KubeletConfig struct {
				StaticPodPath string `json:"staticPodPath"`
				Port          int32  `json:"port"`
			} `json:"kubeletconfig"`
		}
		if err := json.Unmarshal(nodeProxy(t, n, "configz"), &cz); err != nil {
			t.Fatal(err)
		}
		if cz.KubeletConfig.StaticPodPath != n.Manifests || int(cz.KubeletConfig.Port) != n.Port {
			t.Errorf("configz %+v", cz)
		}
	})
}

// nodeProxy GETs path from the node's kubelet API through the API server
// (nodes/proxy), as `kubectl get --raw` does.
func nodeProxy(t *testing.T, n *clusterNode, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := n.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", path).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET nodes/%s/proxy/%s: %v\n%s", n.Name, path, err, raw)
	}
	return raw
}

func parseMetrics(t *testing.T, raw []byte) map[string]bool {
	t.Helper()
	families := agent.ParseMetrics(t, "metrics", string(raw))
	names := map[string]bool{}
	for name := range families {
		names[name] = true
	}
	return names
}

// execIn runs cmd in the pod's container c through the API server's
// pods/exec (agent.Exec).
func execIn(t *testing.T, cfg *rest.Config, n *clusterNode, ns, pod string, cmd []string, stdin io.Reader, tty bool, stdout, stderr io.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := agent.Exec(ctx, cfg, n.Admin, agent.ExecOptions{Namespace: ns, Pod: pod, Container: "c", Command: cmd,
		Stdin: stdin, TTY: tty, Stdout: stdout, Stderr: stderr})
	if err != nil {
		t.Fatalf("exec %q in %s/%s: %v", cmd, ns, pod, err)
	}
}

// portForwardGet forwards a free local port to the pod's port through the
// API server's pods/portforward and GETs path through it.
func portForwardGet(t *testing.T, cfg *rest.Config, n *clusterNode, ns, pod string, port int, path string) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := n.Admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	var out, errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward ended: %v (%s)", err, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("port-forward not ready after 30 s (%s)", errOut.String())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports %v: %v", ports, err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", ports[0].Local, path))
	if err != nil {
		t.Fatalf("GET through port-forward: %v (%s)", err, errOut.String())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestKubeletAPIAuth checks port 10250's authentication and authorization
// directly: the API server's client certificate (x509, SubjectAccessReview
// through its system:kubelet-api-admin binding) gets in; no credentials,
// a bad token, or a token of a ServiceAccount without rights do not.
func TestKubeletAPIAuth(t *testing.T) {
	n := startClusterNode(t)
	base := fmt.Sprintf("https://%s", net.JoinHostPort(n.NodeIP, strconv.Itoa(n.Port)))
	get := func(client *http.Client, path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		var resp *http.Response
		eventually(t, "kubelet API answers", 30*time.Second, func() (err error) {
			resp, err = client.Do(req)
			return err
		})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	anonymous := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the node's self-signed serving cert
	cert, err := tls.LoadX509KeyPair(n.Env.StateDir+"/pki/apiserver-kubelet-client.crt", n.Env.StateDir+"/pki/apiserver-kubelet-client.key")
	if err != nil {
		t.Fatal(err)
	}
	apiserver := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}

	if code, body := get(anonymous, "/pods", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d %q, want 401", code, body)
	}
	if code, body := get(anonymous, "/pods", "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("bad token: %d %q, want 401", code, body)
	}
	if code, body := get(apiserver, "/pods", ""); code != http.StatusOK || !strings.Contains(body, `"kind":"PodList"`) {
		t.Errorf("kube-apiserver's client certificate: %d %q, want 200 and a PodList", code, body)
	}
	// A ServiceAccount token is authenticated (TokenReview) but has no
	// rights on nodes (SubjectAccessReview says no).
	ns := n.Namespace("auth")
	ctx := context.Background()
	token, err := n.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(anonymous, "/pods", token.Status.Token)
	if code != http.StatusForbidden || !strings.Contains(body, "system:serviceaccount:"+ns+":default") {
		t.Errorf("ServiceAccount without rights: %d %q, want 403 naming the user", code, body)
	}
	q := url.Values{"command": {"true"}, "output": {"1"}}
	if code, _ := get(anonymous, "/exec/"+ns+"/x/c?"+q.Encode(), token.Status.Token); code != http.StatusForbidden {
		t.Errorf("exec by a ServiceAccount without rights: %d, want 403", code)
	}
}

// watchWriter collects output and closes seen once want appeared in it.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

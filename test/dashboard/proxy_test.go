package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/agent"
)

// TestDashboardThroughKubectlProxy opens the dashboard the way an operator
// of a cluster reaches it: actorlet joined to the environment's API server
// serves it on its kubelet API only (no --debug-address), behind
// authentication and authorization, and chromium loads it through
// `kubectl proxy` and the API server's nodes/proxy. The page renders, and
// its Server-Sent Events keep arriving through both proxies.
func TestDashboardThroughKubectlProxy(t *testing.T) {
	// The API server's nodes/proxy refuses loopback: the kubelet API
	// listens on the host's address on the pod network. Its clients
	// authenticate with certificates of the environment's CA (the API
	// server's kubelet client) and are authorized by the API server
	// (authorization.mode Webhook, the default with --config).
	n := agent.NewNode(t, binary, agent.InCluster(), agent.OnPodNetwork())
	n.Start()
	e, proc, port := n.Env, n.Proc, n.Port
	kubectl := func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, e.Kubectl, append([]string{"--kubeconfig", e.AdminKubeconfig}, args...)...)
	}
	raw := "/api/v1/nodes/" + e.NodeName + "/proxy/debug/actors.json"
	agent.Eventually(t, "kubectl get --raw "+raw, 60*time.Second, func() error {
		if !proc.Alive() {
			t.Fatalf("actorlet exited:\n%s", proc.Logs())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := kubectl(ctx, "get", "--raw", raw).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.Contains(string(out), `"path":"bootstrap/pod-manager"`) {
			return fmt.Errorf("no pod-manager in %.300s", out)
		}
		return nil
	})
	// Without credentials the kubelet API serves none of it.
	if out, err := exec.Command("curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}",
		fmt.Sprintf("https://%s:%d/debug/actors.json", e.BridgeIP, port)).Output(); err != nil || string(out) != "401" {
		t.Errorf("GET /debug/actors.json on the kubelet API without credentials: %s %v, want 401", out, err)
	}

	proxyPort := agent.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	proxy := kubectl(ctx, "proxy", "--address", "127.0.0.1", "--port", fmt.Sprint(proxyPort))
	proxy.Cancel = func() error { return proxy.Process.Signal(syscall.SIGTERM) }
	stdout, err := proxy.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	proxy.Stderr = proxy.Stdout
	if err := proxy.Start(); err != nil {
		t.Fatalf("kubectl proxy: %v", err)
	}
	t.Cleanup(func() { cancel(); _ = proxy.Wait() })
	started := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			select {
			case started <- s.Text():
			default:
			}
		}
	}()
	select {
	case line := <-started:
		t.Logf("kubectl proxy: %s", line)
	case <-time.After(30 * time.Second):
		t.Fatal("kubectl proxy did not start within 30s")
	}

	b := newBrowser(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/api/v1/nodes/%s/proxy/debug/actors", proxyPort, e.NodeName)
	b.open(url, `#graph g.node[data-kind="pod-manager"]`, 30*time.Second)
	checkGraph(t, b)
	// Every event sets the status to "live · TIME"; three different
	// times are three events that came through both proxies, without a
	// reload.
	eval[bool](b, `window.sameDocument = true; window.seen = new Set();
		new MutationObserver(() => window.seen.add(document.getElementById("status").textContent))
			.observe(document.getElementById("status"), {childList: true, characterData: true, subtree: true}); true`)
	poll[bool](b, "three snapshots through the proxies", `[...window.seen].filter((s) => s.startsWith("live · ")).length >= 3`, 15*time.Second)
	if !eval[bool](b, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}
	b.screenshot("dashboard-kubectl-proxy.png")
	b.checkNoPageErrors()
}

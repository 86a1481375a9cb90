package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestNodeLogQuery asks the node log query (enableSystemLogQuery) for
// files the test writes under /var/log, through the API server's
// nodes/proxy as `kubectl get --raw /api/v1/nodes/NODE/proxy/logs/?query=`
// does. This machine has journalctl but no journal, so a service's query
// falls back to its log file, as on any node whose service logs to a file.
// Upstream's kubelet passes it too:
//
//	CLUSTER_KUBELET=$(hack/node-env upstream-kubelet) go test -run TestNodeLogQuery ./test/cluster/
func TestNodeLogQuery(t *testing.T) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "actorlet-logquery-" + hex.EncodeToString(b)
	dir := "/var/log"
	file := filepath.Join(dir, name+".log")
	escape := filepath.Join(dir, name+"-escape.log")
	t.Cleanup(func() { os.Remove(file); os.Remove(escape) })
	if err := os.WriteFile(file, []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link planted in the log directory to a file outside it.
	if err := os.Symlink("/etc/hostname", escape); err != nil {
		t.Fatal(err)
	}

	// On the pod network: the API server proxies to no loopback address.
	n := startClusterNode(t, onPodNetwork(), withConfig("enableSystemLogQuery: true\n"))
	// Ready may come before the Node's status names this kubelet's port.
	eventually(t, "the kubelet API through the API server", 30*time.Second, func() error {
		if code, body := nodeProxyQuery(t, n, "healthz", ""); code != 200 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	tests := []struct {
		path, query string
		code        int
		body        string // the whole body, or with "~" first a part of it
	}{
		// A file: a path with a slash, relative to /var/log.
		{"logs/", "query=./" + name + ".log", 200, "first line\nsecond line\n"},
		// A service without a journal: /var/log/NAME.log.
		{"logs/", "query=" + name, 200, "first line\nsecond line\n"},
		{"logs/", "query=" + name + "&tailLines=1", 200,
			"\noptions present and query resolved to log files for [" + name + "]\ntry without specifying options\n"},
		{"logs/", "query=ghost-" + name, 200, "\nlog not found for ghost-" + name + "\n"},
		// The plain file server, as without the query.
		{"logs/" + name + ".log", "", 200, "first line\nsecond line\n"},
		// Refused.
		{"logs/", "query=./" + name + "-escape.log", 406,
			`query: Invalid value: ["./` + name + `-escape.log"]: statat ./` + name + "-escape.log: path escapes from parent\n"},
		{"logs/", "query=../etc/hostname", 406, `query: Invalid value: ["../etc/hostname"]: statat ../etc/hostname: path escapes from parent` + "\n"},
		{"logs/", "query=./" + name + ".log&pattern=first", 406, `query: Invalid value: ["./` + name + `.log"]: cannot specify file with options` + "\n"},
		{"logs/" + name + ".log", "query=" + name, 406, "path not allowed in query mode\n"},
		{"logs/", "query=+", 400, `query: Invalid value: [" "]: may not be empty` + "\n"},
		{"logs/", "query=x&tailLines=ten", 400, `tailLines: Invalid value: "ten": strconv.Atoi: parsing "ten": invalid syntax` + "\n"},
		{"logs/", "query=x&boot=1&tailLines=100001", 406,
			"[boot: Invalid value: 1: must be less than 1, tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive]\n"},
		{"logs/", "query=x&sinceTime=2026-02-01T00:00:00Z&untilTime=2026-01-01T00:00:00Z", 406,
			"untilTime: Invalid value: \"2026-01-01T00:00:00Z\": must be after `sinceTime`\n"},
		{"logs/", "query=a%3Bb", 406, `query: Invalid value: "a;b": input contains unsupported characters` + "\n"},
	}
	for _, tt := range tests {
		code, body := nodeProxyQuery(t, n, tt.path, tt.query)
		part, isPart := strings.CutPrefix(tt.body, "~")
		if code != tt.code || isPart && !strings.Contains(body, part) || !isPart && body != tt.body {
			t.Errorf("GET %s?%s: %d %q, want %d %q", tt.path, tt.query, code, body, tt.code, tt.body)
		}
	}
}

// nodeProxyQuery GETs path?query from the node's kubelet API through the
// API server with the admin's credentials, and returns the answer whatever
// its status (client-go's REST client turns a plain-text error into its
// own).
func nodeProxyQuery(t *testing.T, n *clusterNode, path, query string) (int, string) {
	t.Helper()
	cfg := n.Env.AdminRESTConfig(t)
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	u := strings.TrimSuffix(cfg.Host, "/") + "/api/v1/nodes/" + n.Name + "/proxy/" + path
	if query != "" {
		u += "?" + query
	}
	res, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return res.StatusCode, string(body)
}

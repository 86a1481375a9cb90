package standalone

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/test/agent"
)

// The kubelet API of a standalone node: the read-only port's endpoints
// without authentication, and the main port's (anonymous and AlwaysAllow,
// as a standalone configuration has them), including the answers to bad
// requests.
func TestKubeletAPIEndpoints(t *testing.T) {
	n := newNode(t)
	n.Start()
	n.WriteManifest("talker.yaml", manifest("talker", fmt.Sprintf(`  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo first; echo to-stderr >&2; i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"]
`, n.busybox())))
	pod := n.Running("talker", 60*time.Second)
	ns, name := pod.Namespace, pod.Name

	readOnly := fmt.Sprintf("http://127.0.0.1:%d", n.ReadOnly)
	api := fmt.Sprintf("https://127.0.0.1:%d", n.Port)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the node's self-signed certificate
	get := func(url string) (int, string) {
		t.Helper()
		return agent.Get(t, client, url)
	}

	for _, base := range []string{readOnly, api} {
		code, body := get(base + "/metrics")
		if code != http.StatusOK {
			t.Fatalf("%s/metrics: %d %s", base, code, body)
		}
		families := agent.ParseMetrics(t, base+"/metrics", body)
		for _, want := range []string{"kubelet_running_pods", "kubelet_pod_start_duration_seconds", "actorlet_actor_messages_processed_total"} {
			if _, ok := families[want]; !ok {
				t.Errorf("%s/metrics has no %s", base, want)
			}
		}
		code, body = get(base + "/stats/summary")
		var summary statsapi.Summary
		if err := json.Unmarshal([]byte(body), &summary); code != http.StatusOK || err != nil {
			t.Fatalf("%s/stats/summary: %d %v %s", base, code, err, body)
		}
		if summary.Node.NodeName != n.Name || summary.Node.Memory == nil || len(summary.Pods) == 0 {
			t.Errorf("%s/stats/summary: node %+v, %d pods", base, summary.Node, len(summary.Pods))
		}
		// Upstream v1.37 serves /spec on no listener.
		if code, body := get(base + "/spec"); code != http.StatusNotFound {
			t.Errorf("%s/spec: %d %s, want 404", base, code, body)
		}
	}

	// Only the main port has the rest.
	if code, _ := get(readOnly + "/configz"); code != http.StatusNotFound {
		t.Errorf("read-only /configz: %d, want 404", code)
	}
	if code, body := get(api + "/configz"); code != http.StatusOK || !strings.Contains(body, `"kubeletconfig"`) {
		t.Errorf("/configz: %d %s", code, body)
	}
	if code, body := get(api + "/runningpods/"); code != http.StatusOK || !strings.Contains(body, `"name":"`+name+`"`) {
		t.Errorf("/runningpods/: %d %s", code, body)
	}
	if code, body := get(api + "/healthz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]runtime ok") {
		t.Errorf("/healthz?verbose: %d %s", code, body)
	}
	logs := api + "/containerLogs/" + ns + "/" + name + "/c"
	// The runtime copies stdout and stderr separately: their order in the
	// log is not the order they were written in.
	if code, body := get(logs); code != http.StatusOK || !strings.Contains(body, "first\n") || !strings.Contains(body, "to-stderr\n") {
		t.Errorf("/containerLogs: %d %q", code, body)
	}
	if code, body := get(logs + "?tailLines=1&timestamps=true"); code != http.StatusOK || strings.Count(body, "\n") != 1 || !timestamped(body) {
		t.Errorf("/containerLogs?tailLines=1&timestamps=true: %d %q", code, body)
	}
	if code, body := get(logs + "?limitBytes=3"); code != http.StatusOK || len(body) != 3 {
		t.Errorf("/containerLogs?limitBytes=3: %d %q", code, body)
	}
	resp, err := client.Post(api+"/run/"+ns+"/"+name+"/c?cmd=echo+ran", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ran, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(ran, []byte("ran\n")) {
		t.Errorf("/run: %d %q", resp.StatusCode, ran)
	}

	// Bad requests: a clear answer naming what is wrong, and the node
	// goes on serving.
	bad := []struct {
		path string
		code int
		says string
	}{
		{"/containerLogs/" + ns + "/" + name + "/c?tailLines=x", http.StatusBadRequest, "tailLines"},
		{"/containerLogs/" + ns + "/" + name + "/c?sinceSeconds=-3", http.StatusUnprocessableEntity, "sinceSeconds"},
		{"/containerLogs/" + ns + "/" + name + "/nope", http.StatusBadRequest, "nope"},
		{"/containerLogs/" + ns + "/ghost/c", http.StatusNotFound, "ghost"},
		{"/containerLogs/" + ns + "/" + name + "/c?previous=true", http.StatusBadRequest, "previous"},
		{"/containerLogs/only-two/parts", http.StatusBadRequest, "want /containerLogs/NAMESPACE/POD/CONTAINER"},
		{"/exec/" + ns + "/" + name + "/c?command=true&output=1", http.StatusBadRequest, "upgrade request required"},
		{"/exec/" + ns + "/" + name + "/c?command=true", http.StatusBadRequest, "at least 1 of stdin, stdout, stderr"},
		{"/exec/" + ns + "/ghost/c?command=true&output=1", http.StatusNotFound, "ghost"},
	}
	for _, b := range bad {
		code, body := get(api + b.path)
		if code != b.code || !strings.Contains(body, b.says) {
			t.Errorf("GET %s: %d %q, want %d mentioning %q", b.path, code, body, b.code, b.says)
		}
	}
	if code, _ := get(api + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after the bad requests: %d", code)
	}
}

// timestamped reports whether line starts with an RFC3339Nano timestamp and
// a space.
func timestamped(line string) bool {
	ts, _, ok := strings.Cut(line, " ")
	_, err := time.Parse(time.RFC3339Nano, ts)
	return ok && err == nil
}

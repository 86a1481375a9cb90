package gc

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestLogRotation: a container writing past containerLogMaxSize has its log
// rotated every containerLogMonitorInterval, never with more than
// containerLogMaxFiles files, and /containerLogs serves the current log.
func TestLogRotation(t *testing.T) {
	const maxFiles = 2
	n := newNode(t, fmt.Sprintf("containerLogMaxSize: 1Ki\ncontainerLogMaxFiles: %d\ncontainerLogMonitorInterval: 3s\n", maxFiles))
	// About 3 KiB a second, each line numbered.
	n.WriteManifest("chatty.yaml", manifest("chatty", fmt.Sprintf(`  terminationGracePeriodSeconds: 2
  containers:
  - name: chatty
    image: %s
    command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo \"line $i $(printf '%%080d' 0)\"; sleep 0.05; done"]
`, n.busybox())))
	n.Start()
	pod := n.Running("chatty", 60*time.Second)
	live := filepath.Join(podLogDir(pod), "chatty", "0.log")

	// Three rotations, watched: the live log and at most maxFiles-1
	// rotated files at any time.
	var rotations []string
	n.Eventually("three rotations", 3*15*time.Second, func() error {
		rotated, _ := filepath.Glob(live + ".*")
		if files := len(rotated) + 1; files > maxFiles {
			t.Fatalf("%d log files (%v and the live one), want at most %d", files, rotated, maxFiles)
		}
		for _, r := range rotated {
			if !slices.Contains(rotations, r) {
				rotations = append(rotations, r)
			}
		}
		if len(rotations) < 3 {
			return fmt.Errorf("rotations seen: %v", rotations)
		}
		return nil
	})
	if got := len(n.entries("log rotation done")); got == 0 {
		t.Errorf("no log rotation logged")
	}

	// The current log is what /containerLogs serves: the newest lines, and
	// none from the first rotations, which are gone. Right after a
	// rotation the live log may not hold a line yet.
	n.Eventually("/containerLogs serves the current log", 3*5*time.Second, func() error {
		onDisk, ok := lastLineNumber(readFile(t, live))
		if !ok {
			return fmt.Errorf("no line in the live log yet")
		}
		served := containerLogs(t, n, pod, "chatty")
		if got, ok := lastLineNumber(served); !ok || got < onDisk {
			return fmt.Errorf("/containerLogs ends at line %d (%v), the live log on disk was at %d", got, ok, onDisk)
		}
		if regexp.MustCompile(`(?m)^line 1 `).MatchString(served) {
			t.Fatalf("/containerLogs serves line 1, rotated away three times since")
		}
		return nil
	})
}

var lineNumber = regexp.MustCompile(`(?m)^line (\d+) `)

// lastLineNumber is the number of the last "line N" in a log, if any.
func lastLineNumber(log string) (int, bool) {
	m := lineNumber.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n, true
}

// readFile returns the messages of a CRI log file, each line of which is
// "TIME STREAM TAG MESSAGE"; "" while a rotation has renamed it and the
// runtime has not reopened it yet.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^\S+ (stdout|stderr) [FP] `).ReplaceAllString(string(b), "")
}

// containerLogs is GET /containerLogs/NAMESPACE/POD/CONTAINER on the
// kubelet API, what `kubectl logs` reads through the API server.
func containerLogs(t *testing.T, n *node, pod *v1.Pod, container string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the node's self-signed serving certificate, on loopback
	u := fmt.Sprintf("https://127.0.0.1:%d/containerLogs/%s/%s/%s", n.Port, pod.Namespace, pod.Name, container)
	resp, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v: %s", u, resp.Status, err, b)
	}
	return string(b)
}

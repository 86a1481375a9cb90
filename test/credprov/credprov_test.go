// Package credprov runs the environment's node with an image credential
// provider plugin of ours (./provider) against the real kube-apiserver,
// containerd and the environment's registry with authentication: a pod
// pulls the private image with the plugin's credentials and no pull
// secret, and the plugin's cached answer spares it a second run. Upstream
// kubelet v1.37.2, which takes the same flags, is the reference:
//
//	CREDPROV_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/credprov/
package credprov

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "CREDPROV_KUBELET") }

const providerName = "credprov-test"

// TestCredentialProviderPlugin: the private image, refused without
// credentials, pulled by a pod without pull secrets with those of the
// plugin, which is asked about the image's repository; a second pull
// within the answer's cacheDuration uses the cached answer (the plugin
// is not run again); no credential in the kubelet's log or the events.
func TestCredentialProviderPlugin(t *testing.T) {
	e := env.Get(t, env.WithAPIServer())
	if e.PrivateImage == "" {
		t.Fatal("hack/node-env env exports no ACTORLET_PRIVATE_IMAGE: run hack/node-env up")
	}
	dir := t.TempDir()
	// The kubelet runs the plugin as root; the test reads its log.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	agent.BuildGo(t, "./test/credprov/provider", filepath.Join(bin, providerName))
	requests := filepath.Join(dir, "requests")
	config := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1",
		"kind":       "CredentialProviderConfig",
		"providers": []map[string]any{{
			"name":                 providerName,
			"matchImages":          []string{e.AuthRegistry},
			"defaultCacheDuration": "1m",
			"apiVersion":           "credentialprovider.kubelet.k8s.io/v1",
			"env": []map[string]string{
				{"name": "CREDPROV_LOG", "value": requests},
				{"name": "CREDPROV_REGISTRY", "value": e.AuthRegistry},
				{"name": "CREDPROV_USER", "value": e.AuthRegistryUser},
				{"name": "CREDPROV_PASSWORD", "value": e.AuthRegistryPassword},
				{"name": "CREDPROV_CACHE_KEY_TYPE", "value": "Registry"},
				{"name": "CREDPROV_CACHE_DURATION", "value": "10m"},
			},
		}},
	}
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "config.json")
	if err := os.WriteFile(configFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	n := kubelet.NewAPIPods(t, agent.WithArgs("--image-credential-provider-config", configFile, "--image-credential-provider-bin-dir", bin))
	n.Up(t, "credprov")

	asked := func(t *testing.T) []string {
		t.Helper()
		b, err := os.ReadFile(requests)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
	// The plugin is asked about the image's repository, without its tag.
	repository := e.PrivateImage
	if i := strings.LastIndex(e.PrivateImage, ":"); i > strings.LastIndex(e.PrivateImage, "/") {
		repository = e.PrivateImage[:i]
	}

	t.Run("pulled with the plugin's credentials", func(t *testing.T) {
		n.Run(t, n.FreshPullPod(t, "first", e.PrivateImage))
		n.Event(t, "first", "Pulled", fmt.Sprintf("Successfully pulled image %q", e.PrivateImage))
		if got := asked(t); len(got) != 1 || got[0] != repository {
			t.Errorf("the plugin was asked about %q, want once about %q", got, repository)
		}
	})

	t.Run("the cached answer spares a second run", func(t *testing.T) {
		n.Run(t, n.FreshPullPod(t, "second", e.PrivateImage))
		n.Event(t, "second", "Pulled", fmt.Sprintf("Successfully pulled image %q", e.PrivateImage))
		if got := asked(t); len(got) != 1 {
			t.Errorf("the plugin was asked %d times (%q), want once: the answer is cached for 10m", len(got), got)
		}
	})

	evs, err := n.Events("")
	if err != nil {
		t.Fatal(err)
	}
	told := []string{n.Logs()}
	for _, ev := range evs {
		told = append(told, ev.Reason+": "+ev.Message)
	}
	for _, line := range told {
		if strings.Contains(line, e.AuthRegistryPassword) {
			t.Errorf("the password in: %s", env.Tail(line, 400))
		}
	}
}

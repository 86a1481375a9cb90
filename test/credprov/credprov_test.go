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
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	n, asked := upWithPlugin(t, e, "credprov", nil, nil)
	repository := repositoryOf(e.PrivateImage)

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
	noSecretsTold(t, e, n)
}

// audience is the service account token audience of the plugin in
// service account token mode.
const audience = "credprov-test-registry"

// TestServiceAccountTokenForPlugin: a plugin with tokenAttributes, which
// gives credentials only for a token, is told a token of the pod's
// service account for its audience, bound to the pod, and the account's
// annotations it asks for; the node may request that audience through
// RBAC (the NodeRestriction admission's request-serviceaccounts-token-audience
// verb). A pod of an account without the required annotation gets nothing
// from the plugin, which is not run, and its pull fails, also when the
// image is on the node, pulled for another account; with the
// ServiceAccount cache type a second pod of the account uses the answer,
// and a third the image without pulling it.
func TestServiceAccountTokenForPlugin(t *testing.T) {
	e := env.Get(t, env.WithAPIServer())
	tokens := map[string]any{
		"serviceAccountTokenAudience":          audience,
		"requireServiceAccount":                true,
		"requiredServiceAccountAnnotationKeys": []string{"credprov.example.com/role"},
		"optionalServiceAccountAnnotationKeys": []string{"credprov.example.com/team"},
		"cacheType":                            "ServiceAccount",
	}
	n, asked := upWithPlugin(t, e, "credprov-sa", tokens, map[string]string{"CREDPROV_REQUIRE_TOKEN": "1"})
	allowAudience(t, n)
	for name, annotations := range map[string]map[string]string{
		"puller": {"credprov.example.com/role": "pull", "credprov.example.com/team": "a", "unasked": "x"},
		"plain":  nil,
	} {
		sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
		if _, err := n.Admin.CoreV1().ServiceAccounts(n.NS).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, account string) *v1.Pod {
		p := n.FreshPullPod(t, name, e.PrivateImage)
		p.Spec.ServiceAccountName = account
		return p
	}
	repository := repositoryOf(e.PrivateImage)
	want := fmt.Sprintf("%s aud=%s pod=%s/first sa=puller annotations=credprov.example.com/role=pull,credprov.example.com/team=a,",
		repository, audience, n.NS)

	t.Run("pulled with the account's token", func(t *testing.T) {
		n.Run(t, pod("first", "puller"))
		n.Event(t, "first", "Pulled", fmt.Sprintf("Successfully pulled image %q", e.PrivateImage))
		if got := asked(t); len(got) != 1 || got[0] != want {
			t.Errorf("the plugin was asked %q, want once %q", got, want)
		}
	})

	t.Run("another pod of the account uses the cached answer", func(t *testing.T) {
		n.Run(t, pod("second", "puller"))
		if got := asked(t); len(got) != 1 {
			t.Errorf("the plugin was asked %q, want once: the answer is cached for the account", got)
		}
	})

	t.Run("a pod of the account uses the image it pulled", func(t *testing.T) {
		p := n.NewPod("third", nil, n.Sleeper("c"))
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = e.PrivateImage, v1.PullIfNotPresent
		p.Spec.ServiceAccountName = "puller"
		n.Run(t, p)
		n.Event(t, "third", "Pulled", fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", e.PrivateImage))
	})

	t.Run("a pod of an account without the required annotation must pull, and cannot", func(t *testing.T) {
		// The image is on the node, pulled for the puller account: not
		// this pod's without credentials of its own.
		p := n.NewPod("fourth", nil, n.Sleeper("c"))
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = e.PrivateImage, v1.PullIfNotPresent
		p.Spec.ServiceAccountName = "plain"
		n.Create(t, p)
		n.Event(t, "fourth", "Failed", "Failed to pull image")
		if got := asked(t); len(got) != 1 {
			t.Errorf("the plugin was asked %q, want once: it is not run for an account without the required annotation", got)
		}
	})
	noSecretsTold(t, e, n)
}

// upWithPlugin starts the node under test, its pods in a namespace named
// from prefix, with the provider plugin of ours for the environment's
// registry with authentication, configured with tokenAttributes (none
// when nil) and env added to its environment; asked returns what the
// plugin was asked, a line per run.
func upWithPlugin(t *testing.T, e *env.Env, prefix string, tokenAttributes map[string]any, extraEnv map[string]string) (n *agent.APIPods, asked func(*testing.T) []string) {
	t.Helper()
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
	pluginEnv := []map[string]string{
		{"name": "CREDPROV_LOG", "value": requests},
		{"name": "CREDPROV_REGISTRY", "value": e.AuthRegistry},
		{"name": "CREDPROV_USER", "value": e.AuthRegistryUser},
		{"name": "CREDPROV_PASSWORD", "value": e.AuthRegistryPassword},
		{"name": "CREDPROV_CACHE_KEY_TYPE", "value": "Registry"},
		{"name": "CREDPROV_CACHE_DURATION", "value": "10m"},
	}
	for k, v := range extraEnv {
		pluginEnv = append(pluginEnv, map[string]string{"name": k, "value": v})
	}
	provider := map[string]any{
		"name":                 providerName,
		"matchImages":          []string{e.AuthRegistry},
		"defaultCacheDuration": "1m",
		"apiVersion":           "credentialprovider.kubelet.k8s.io/v1",
		"env":                  pluginEnv,
	}
	if tokenAttributes != nil {
		provider["tokenAttributes"] = tokenAttributes
	}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1",
		"kind":       "CredentialProviderConfig",
		"providers":  []map[string]any{provider},
	})
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "config.json")
	if err := os.WriteFile(configFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	n = kubelet.NewAPIPods(t, agent.WithArgs("--image-credential-provider-config", configFile, "--image-credential-provider-bin-dir", bin))
	n.Up(t, prefix)
	return n, func(t *testing.T) []string {
		t.Helper()
		b, err := os.ReadFile(requests)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
	}
}

// allowAudience lets the nodes request tokens for audience, which no pod
// volume names, as a cluster using service account tokens for credential
// provider plugins must (upstream's NodeRestriction admission asks the
// authorizer for the request-serviceaccounts-token-audience verb on a
// resource named as the audience).
func allowAudience(t *testing.T, n *agent.APIPods) {
	t.Helper()
	ctx := context.Background()
	name := "credprov-test-audience-" + n.NS
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{audience}, Verbs: []string{"request-serviceaccounts-token-audience"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:nodes"}}}
	if _, err := n.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := n.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// repositoryOf is the image without its tag, what a plugin is asked about.
func repositoryOf(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

// noSecretsTold checks that the registry's password is in neither the
// kubelet's log nor the events.
func noSecretsTold(t *testing.T, e *env.Env, n *agent.APIPods) {
	t.Helper()
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

package registryauth

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func dockercfg(name, content string) v1.Secret {
	return v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Type:       v1.SecretTypeDockercfg,
		Data:       map[string][]byte{v1.DockerConfigKey: []byte(content)},
	}
}

func dockerconfigjson(name, content string) v1.Secret {
	return v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(content)},
	}
}

// cfgFor is a .dockercfg with one registry's credentials.
func cfgFor(registry, user, pass string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return fmt.Sprintf(`{%q: {"email": "%s@example.com", "auth": %q}}`, registry, user, auth)
}

func mustKeyring(t *testing.T, secrets ...v1.Secret) *Keyring {
	t.Helper()
	k, err := FromSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestURLsMatch is upstream's TestURLsMatch.
func TestURLsMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, target string
		want         bool
	}{
		// Wildcards in the host.
		{"*.kubernetes.io", "prefix.kubernetes.io", true},
		{"prefix.*.io", "prefix.kubernetes.io", true},
		{"prefix.kubernetes.*", "prefix.kubernetes.io", true},
		{"*-good.kubernetes.io", "prefix-good.kubernetes.io", true},
		// With paths: the glob's path is a prefix.
		{"*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true},
		{"prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", true},
		// With ports.
		{"*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1111/blah", true},
		{"prefix.*.io:1111/foo", "prefix.kubernetes.io:1111/foo/bar", true},
		// A wildcard matches one label, never none or two.
		{"*.kubernetes.io", "kubernetes.io", false},
		{"*.*.kubernetes.io", "prefix.kubernetes.io", false},
		{"*.*.kubernetes.io", "kubernetes.io", false},
		{"*kubernetes.io", "a.kubernetes.io", false},
		{"*kubernetes.io", "kubernetes.io", true},
		{"*.*.*.kubernetes.io", "a.b.c.kubernetes.io", true},
		{"kubernetes.io", "kubernetes.com", false},
		{"k*.io", "quay.io", false},
		// Ports must be equal, a missing one included.
		{"*.kubernetes.io:1234/blah", "prefix.kubernetes.io:1111/blah", false},
		{"prefix.*.io/foo", "prefix.kubernetes.io:1111/foo/bar", false},
		// The path matches as a string prefix, as upstream.
		{"bar.example.com/pong", "bar.example.com/pongz", true},
		{"bar.example.com/pong", "bar.example.com/ping", false},
	} {
		if got := urlsMatch(tc.glob, tc.target); got != tc.want {
			t.Errorf("urlsMatch(%q, %q) = %t, want %t", tc.glob, tc.target, got, tc.want)
		}
	}
}

// TestKeyringGlobs is upstream's TestDockerKeyringForGlob and
// TestKeyringMiss: a registry name with a scheme, wildcards, a port or
// a /v1/ or /v2/ path, looked up for a repository under it.
func TestKeyringGlobs(t *testing.T) {
	for _, tc := range []struct {
		registry, repo string
		hit            bool
	}{
		{"https://hello.kubernetes.io", "hello.kubernetes.io", true},
		{"https://*.docker.io", "prefix.docker.io", true},
		{"https://prefix.*.io", "prefix.docker.io", true},
		{"https://prefix.docker.*", "prefix.docker.io", true},
		{"https://*.docker.io/path", "prefix.docker.io/path", true},
		{"https://prefix.*.io/path", "prefix.docker.io/path/subpath", true},
		{"https://prefix.docker.*/path", "prefix.docker.io/path", true},
		{"https://*.docker.io:8888", "prefix.docker.io:8888", true},
		{"https://prefix.*.io:8888", "prefix.docker.io:8888", true},
		{"https://prefix.docker.*:8888", "prefix.docker.io:8888", true},
		{"https://*.docker.io/path:1111", "prefix.docker.io/path:1111", true},
		{"https://*.docker.io/v1/", "prefix.docker.io/path:1111", true},
		{"https://*.docker.io/v2/", "prefix.docker.io/path:1111", true},
		{"https://prefix.docker.*/path:1111", "prefix.docker.io/path:1111", true},
		{"prefix.docker.io:1111", "prefix.docker.io:1111/path", true},
		{"*.docker.io:1111", "prefix.docker.io:1111/path", true},
		{"http://127.0.0.1:15001", "127.0.0.1:15001/private", true},

		{"https://hello.kubernetes.io", "world.mesos.org/foo/bar", false},
		{"https://*.docker.com", "prefix.docker.io", false},
		{"https://suffix.*.io", "prefix.docker.io", false},
		{"https://prefix.docker.c*", "prefix.docker.io", false},
		{"https://prefix.*.io/path:1111", "prefix.docker.io/path/subpath:1111", false},
		{"suffix.*.io", "prefix.docker.io", false},
		{"127.0.0.1:15001", "127.0.0.1:15000/private", false},
		{"127.0.0.1", "127.0.0.1:15001/private", false},
	} {
		t.Run(tc.registry+" "+tc.repo, func(t *testing.T) {
			k := mustKeyring(t, dockercfg("s", cfgFor(tc.registry, "user", "pass")))
			got := k.lookup(tc.repo + "/foo/bar")
			want := []entry(nil)
			if tc.hit {
				want = []entry{{Username: "user", Password: "pass"}}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("lookup = %+v, want %+v", got, want)
			}
		})
	}
}

// TestKeyringOrder is upstream's TestDockerKeyringLookup and
// TestIssue3797: every matching registry's credentials, the most
// specific first.
func TestKeyringOrder(t *testing.T) {
	ada, grace, rex := entry{Username: "ada", Password: "smash"}, entry{Username: "grace", Password: "squash"}, entry{Username: "rex", Password: "tiny arms"}
	k := mustKeyring(t,
		dockercfg("a", `{"bar.example.com/pong": {"username": "grace", "password": "squash"},
			"bar.example.com": {"username": "ada", "password": "smash"}}`),
		dockerconfigjson("b", `{"auths": {"https://quay.io/v1/": {"username": "rex", "password": "tiny arms"}}}`))
	for _, tc := range []struct {
		repo string
		want []entry
	}{
		{"bar.example.com", []entry{ada}},
		{"bar.example.com/pong", []entry{grace, ada}},
		{"bar.example.com/ping", []entry{ada}},
		{"bar.example.com/pongz", []entry{grace, ada}},
		{"bar.example.com/pong/pang", []entry{grace, ada}},
		{"example.com", nil},
		{"foo.example.com", nil},
		{"quay.io", []entry{rex}},
		{"quay.io/foo", []entry{rex}},
		{"quay.io/foo/bar", []entry{rex}},
	} {
		if got := k.lookup(tc.repo); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("lookup(%q) = %+v, want %+v", tc.repo, got, tc.want)
		}
	}
}

// TestKeyringDockerHub is upstream's Docker Hub cases: the credentials of
// https://index.docker.io/v1/ are for images without a host, or on
// docker.io or index.docker.io, and no other.
func TestKeyringDockerHub(t *testing.T) {
	k := mustKeyring(t, dockercfg("s", cfgFor("https://index.docker.io/v1/", "hub", "pass")))
	hub := []*runtimeapi.AuthConfig{{Username: "hub", Password: "pass"}}
	for _, tc := range []struct {
		image string
		want  []*runtimeapi.AuthConfig
	}{
		{"google/docker-registry", hub},
		{"jenkins", hub},
		{"jenkins:2", hub},
		{"index.docker.io/google/docker-registry", hub},
		{"docker.io/library/busybox:1.36", hub},
		{"world.mesos.org/foo/bar", nil},
		// Upstream takes a first component without "." or ":" for a user
		// of Docker Hub, localhost included.
		{"localhost/foo", hub},
		{"registry:5000/foo/bar", nil},
	} {
		if got := k.Lookup(tc.image); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Lookup(%q) = %v, want %v", tc.image, got, tc.want)
		}
	}
}

// TestIsDefaultRegistry is upstream's TestIsDefaultRegistryMatch.
func TestIsDefaultRegistry(t *testing.T) {
	for repo, want := range map[string]bool{
		"foo/bar":                 true,
		"docker.io/foo/bar":       true,
		"index.docker.io/foo/bar": true,
		"foo":                     true,
		"":                        false,
		"registry.tld/foo/bar":    false,
		"registry:5000/foo/bar":   false,
		"myhostdocker.io/foo/bar": false,
	} {
		if got := isDefaultRegistry(repo); got != want {
			t.Errorf("isDefaultRegistry(%q) = %t, want %t", repo, got, want)
		}
	}
}

// TestRepository checks the name an image is looked up by, as
// upstream's ParseImageName gives it.
func TestRepository(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                                  "docker.io/library/busybox",
		"busybox:1.36":                             "docker.io/library/busybox",
		"busybox@sha256:abcd":                      "docker.io/library/busybox",
		"library/busybox:1.36":                     "docker.io/library/busybox",
		"docker.io/busybox":                        "docker.io/library/busybox",
		"index.docker.io/library/busybox":          "docker.io/library/busybox",
		"google/pause":                             "docker.io/google/pause",
		"registry.k8s.io/pause:3.10":               "registry.k8s.io/pause",
		"127.0.0.1:15001/private/busybox:1.36":     "127.0.0.1:15001/private/busybox",
		"127.0.0.1:15001/private/busybox@sha256:1": "127.0.0.1:15001/private/busybox",
		"localhost/foo":                            "localhost/foo",
		"Registry/foo":                             "Registry/foo",
		"quay.io/coreos/etcd:v3.5.0":               "quay.io/coreos/etcd",
	} {
		if got := repository(image); got != want {
			t.Errorf("repository(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestFromSecrets follows upstream's Test_MakeDockerKeyring: which
// secrets count, in which order their credentials come, and that a
// docker config that does not decode is an error.
func TestFromSecrets(t *testing.T) {
	const image = "registry.example.com/team/app:1"
	cred := func(u, p string) *runtimeapi.AuthConfig { return &runtimeapi.AuthConfig{Username: u, Password: p} }
	for _, tc := range []struct {
		name    string
		secrets []v1.Secret
		want    []*runtimeapi.AuthConfig
		err     string
	}{
		{name: "none"},
		{
			name:    "dockerconfigjson with auth",
			secrets: []v1.Secret{dockerconfigjson("s1", `{"auths": {"registry.example.com": {"auth": "dXNlcjpwYXNzd29yZA=="}}}`)},
			want:    []*runtimeapi.AuthConfig{cred("user", "password")},
		},
		{
			name:    "dockerconfigjson with username and password",
			secrets: []v1.Secret{dockerconfigjson("s1", `{"auths": {"http://registry.example.com/v2/": {"username": "u", "password": "p"}}}`)},
			want:    []*runtimeapi.AuthConfig{cred("u", "p")},
		},
		{
			name:    "dockercfg",
			secrets: []v1.Secret{dockercfg("s1", cfgFor("registry.example.com", "user", "password"))},
			want:    []*runtimeapi.AuthConfig{cred("user", "password")},
		},
		{
			name: "secrets in the pod's order",
			secrets: []v1.Secret{
				dockercfg("s1", cfgFor("registry.example.com", "first", "p1")),
				dockerconfigjson("s2", `{"auths": {"registry.example.com": {"username": "second", "password": "p2"}}}`),
			},
			want: []*runtimeapi.AuthConfig{cred("first", "p1"), cred("second", "p2")},
		},
		{
			name: "a more specific registry first, whatever the secrets' order",
			secrets: []v1.Secret{
				dockercfg("s1", cfgFor("registry.example.com", "host", "p1")),
				dockercfg("s2", cfgFor("registry.example.com/team", "team", "p2")),
			},
			want: []*runtimeapi.AuthConfig{cred("team", "p2"), cred("host", "p1")},
		},
		{
			name: "wildcard",
			secrets: []v1.Secret{
				dockercfg("s1", cfgFor("*.example.com", "wild", "p")),
			},
			want: []*runtimeapi.AuthConfig{cred("wild", "p")},
		},
		{
			name: "other types and keys are ignored",
			secrets: []v1.Secret{
				{Type: v1.SecretTypeOpaque, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`not json`)}},
				{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigKey: []byte(`not json`)}},
				{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`not json`)}},
				{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: {}}},
			},
		},
		{
			name:    "no registry matches",
			secrets: []v1.Secret{dockercfg("s1", cfgFor("other.example.com", "user", "password"))},
		},
		{
			name:    "invalid JSON",
			secrets: []v1.Secret{dockerconfigjson("bad", `{"auths": {"registry.example.com": {"password": Sup3rS3cret}}}`)},
			err:     "pull secret ns/bad: .dockerconfigjson: invalid JSON at offset",
		},
		{
			name:    "auth without colon",
			secrets: []v1.Secret{dockercfg("bad", `{"registry.example.com": {"auth": "cGFudHM="}}`)},
			err:     "pull secret ns/bad: .dockercfg: unable to parse auth field",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := FromSecrets(tc.secrets)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "Sup3r") || strings.Contains(err.Error(), "'S'") {
					t.Errorf("error %q quotes the secret's content", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := k.Lookup(image); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNilKeyring(t *testing.T) {
	var k *Keyring
	if got := k.Lookup("busybox"); got != nil {
		t.Errorf("nil keyring: %v", got)
	}
}

// TestLookupTracked: each credential names the secret it comes from and
// carries upstream's CredentialHash of it (the SHA-256 of the JSON of
// username, password and email, as upstream's hashAuthConfig), the same
// for the same credentials in two secrets, whether given as fields or as
// "auth".
func TestLookupTracked(t *testing.T) {
	withEmail := "353258b53f5e9a57b059eab3f05312fc35bbeb874f08ce101e7bf0bf46977423" // {"username":"ada","password":"smash","email":"ada@example.com"}
	without := "bac1a56db7792e645a376c8b3118a76901badd0dc56ffd570f246a31a8002c10"   // {"username":"ada","password":"smash"}
	a := dockerconfigjson("a", `{"auths": {"registry.example": {"username": "ada", "password": "smash", "email": "ada@example.com"}}}`)
	a.UID = "uid-a"
	b := dockercfg("b", cfgFor("registry.example", "ada", "smash"))
	b.UID = "uid-b"
	c := dockerconfigjson("c", `{"auths": {"registry.example": {"username": "ada", "password": "smash"}}}`)
	c.UID = "uid-c"
	got := mustKeyring(t, a, b, c).LookupTracked("registry.example/app:1")
	want := []Credential{
		{Auth: &runtimeapi.AuthConfig{Username: "ada", Password: "smash"}, Secret: SecretRef{UID: "uid-a", Namespace: "ns", Name: "a"}, Hash: withEmail},
		{Auth: &runtimeapi.AuthConfig{Username: "ada", Password: "smash"}, Secret: SecretRef{UID: "uid-b", Namespace: "ns", Name: "b"}, Hash: withEmail},
		{Auth: &runtimeapi.AuthConfig{Username: "ada", Password: "smash"}, Secret: SecretRef{UID: "uid-c", Namespace: "ns", Name: "c"}, Hash: without},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LookupTracked = %+v, want %+v", got, want)
	}
}

package imagepull

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// upstreamFiles are records as upstream's kubelet writes them (its
// pullmanager testdata), under the names it gives them.
var upstreamFiles = map[string]string{
	"pulled/sha256-b3c0cc4278800b03a308ceb2611161430df571ca733122f0a40ac8b9792a9064":  `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimageref","credentialMapping":{"docker.io/testing/test":{"kubernetesSecrets":[{"uid":"testsecretuid","namespace":"default","name":"pull-secret","credentialHash":"testsecrethash"}]}}}`,
	"pulled/sha256-dd1dd8dc6a329b7e1c2e43951302b23a047cb20fd3e10090e4ce7e8396035405":  `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1","lastUpdatedTime":"2025-06-21T12:26:40Z","imageRef":"testimage-anonpull-alpha","credentialMapping":{"docker.io/testing/test":{"nodePodsAccessible":true}}}`,
	"pulled/sha256-e766e4624f9bc4d3847d6c5b470d9d5362cc8d0c250bd9572daf95278e044263":  `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testbrokenrecord":"credentialMapping":{}}`,
	"pulling/sha256-aef2af226629a35d5f3ef0fdbb29fdbebf038d0acd8850590e8c48e1e283aa56": `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"docker.io/testing/test:latest"}`,
}

// images is a runtime's image list.
type images []*runtimeapi.Image

func (l images) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: l}, nil
}

func newManager(t *testing.T, root string, l ImageLister) *Manager {
	t.Helper()
	m, err := New(context.Background(), root, mustPolicy(t, ""), l, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func secrets(s ...Secret) func() (PodCredentials, error) {
	return func() (PodCredentials, error) { return PodCredentials{Secrets: s}, nil }
}

// TestUpstreamRecords: actorlet reads the records upstream's kubelet
// wrote, by the same file names (a broken one makes the pod pull), and
// turns an intent whose image is on the node into a record without
// credentials.
func TestUpstreamRecords(t *testing.T) {
	root := t.TempDir()
	for name, content := range upstreamFiles {
		p := filepath.Join(root, recordsDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, root, images{{Id: "sha256:intent", RepoTags: []string{"docker.io/testing/test:latest"}}})
	upstreamSecret := Secret{UID: "testsecretuid", Namespace: "default", Name: "pull-secret", CredentialHash: "testsecrethash"}
	for _, tc := range []struct {
		name, image, ref string
		pod              []Secret
		want             bool
	}{
		{"v1beta1 record, its secret", "docker.io/testing/test:v1", "testimageref", []Secret{upstreamSecret}, false},
		{"v1beta1 record, no secret", "docker.io/testing/test:v1", "testimageref", nil, true},
		{"v1alpha1 record, anonymous", "docker.io/testing/test:v1", "testimage-anonpull-alpha", nil, false},
		{"a broken record", "docker.io/testing/broken:v1", "testbrokenrecord", []Secret{upstreamSecret}, true},
		{"an intent finished by the last run", "docker.io/testing/test:latest", "sha256:intent", []Secret{upstreamSecret}, true},
		{"no record: preloaded", "docker.io/testing/test:v1", "preloaded", nil, false},
	} {
		got, err := m.MustPull(tc.image, tc.ref, secrets(tc.pod...))
		if err != nil || got != tc.want {
			t.Errorf("%s: MustPull = %t, %v; want %t", tc.name, got, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, recordsDir, "pulling", fileName("docker.io/testing/test:latest"))); !os.IsNotExist(err) {
		t.Errorf("the intent of an image on the node is still there: %v", err)
	}
}

// TestPullRecords: a pull with A's secret is written in upstream's
// format and survives a restart; a pod without the secret must pull, a
// pod with the same credentials in another secret need not, and that
// secret is added to the record; an anonymous pull opens the image to
// every pod; Prune drops the records of removed images.
func TestPullRecords(t *testing.T) {
	root := t.TempDir()
	m := newManager(t, root, nil)
	if err := m.PullIntent(privateImage); err != nil {
		t.Fatal(err)
	}
	intent := filepath.Join(root, recordsDir, "pulling", fileName(privateImage))
	if raw, err := os.ReadFile(intent); err != nil || string(raw) != `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"`+privateImage+`"}` {
		t.Fatalf("intent file: %s, %v", raw, err)
	}
	// While the pull is under way the image counts as pulled by the
	// kubelet, with credentials unknown.
	if got, _ := m.MustPull(privateImage, "sha256:private", secrets(secretA)); !got {
		t.Error("during the pull: MustPull = false")
	}
	m.Pulled(privateImage, "sha256:private", &Credentials{KubernetesSecrets: []Secret{secretA}})
	if _, err := os.Stat(intent); !os.IsNotExist(err) {
		t.Errorf("intent after the pull: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(root, recordsDir, "pulled", fileName("sha256:private")))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"`,
		`"imageRef":"sha256:private","credentialMapping":{"` + privateName + `":{"kubernetesSecrets":[{"uid":"uid-a","namespace":"a","name":"regcred","credentialHash":"hash-good"}]}}}`} {
		if !strings.Contains(string(raw), part) {
			t.Errorf("record %s lacks %s", raw, part)
		}
	}

	m = newManager(t, root, nil) // a restart
	for _, tc := range []struct {
		name string
		pod  []Secret
		want bool
	}{
		{"no secret", nil, true},
		{"a wrong secret", []Secret{secretBWrong}, true},
		{"A's secret", []Secret{secretA}, false},
		{"the same credentials in B", []Secret{secretB}, false},
	} {
		if got, err := m.MustPull(privateImage, "sha256:private", secrets(tc.pod...)); err != nil || got != tc.want {
			t.Errorf("%s: MustPull = %t, %v; want %t", tc.name, got, err, tc.want)
		}
	}
	m = newManager(t, root, nil)
	rec, err := m.store.readPulled("sha256:private")
	if err != nil || len(rec.CredentialMapping[privateName].KubernetesSecrets) != 2 {
		t.Fatalf("B's secret not added to the record: %+v, %v", rec, err)
	}

	// Pulled without credentials: every pod of the node.
	if err := m.PullIntent("registry.example/public/app:1"); err != nil {
		t.Fatal(err)
	}
	m.Pulled("registry.example/public/app:1", "sha256:public", &Credentials{NodePodsAccessible: true})
	if got, _ := m.MustPull("registry.example/public/app:2", "sha256:public", secrets()); got {
		t.Error("anonymous pull: MustPull = true")
	}

	// A failed pull leaves no intent behind.
	if err := m.PullIntent("registry.example/private/other:1"); err != nil {
		t.Fatal(err)
	}
	m.PullFailed("registry.example/private/other:1")
	if entries, _ := os.ReadDir(filepath.Join(root, recordsDir, "pulling")); len(entries) != 0 {
		t.Errorf("intents left: %v", entries)
	}

	m.Prune([]string{"sha256:public"}, time.Now().Add(time.Minute))
	if rec, _ := m.store.readPulled("sha256:private"); rec != nil {
		t.Error("the record of a removed image is still there")
	}
	if rec, _ := m.store.readPulled("sha256:public"); rec == nil {
		t.Error("the record of a remaining image was removed")
	}
	if got, _ := m.MustPull(privateImage, "sha256:private", secrets()); got {
		t.Error("after the prune, an image without a record is taken for preloaded")
	}
}

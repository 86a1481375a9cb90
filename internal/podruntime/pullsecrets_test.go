package podruntime

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/credprovider"
	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/registryauth"
)

const (
	privateImage = "registry.example.com:5000/team/app:1"
	goodPassword = "g00d-Pa55word"
	badPassword  = "b4d-Pa55word"
)

// authRegistry is a runtime whose registry wants user/goodPassword for
// every image, and records the credentials of each pull.
type authRegistry struct {
	*fakecri.Runtime
	pulls []*runtimeapi.AuthConfig
}

func (a *authRegistry) PullImage(ctx context.Context, in *runtimeapi.PullImageRequest, opts ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	var auth *runtimeapi.AuthConfig
	if in.Auth != nil {
		auth = proto.Clone(in.Auth).(*runtimeapi.AuthConfig)
	}
	a.pulls = append(a.pulls, auth)
	if auth.GetUsername() != "user" || auth.GetPassword() != goodPassword {
		return nil, status.Errorf(codes.Unknown, "failed to pull and unpack image %q: failed to resolve reference %q: pulling from host registry.example.com:5000 failed with status code [manifests 1]: 401 Unauthorized",
			in.Image.Image, in.Image.Image)
	}
	return a.Runtime.PullImage(ctx, in, opts...)
}

// secretObjects are the API's secrets; a missing one is NotFound.
type secretObjects map[string]*v1.Secret

func (o secretObjects) ConfigMap(_ context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (o secretObjects) Secret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	if s, ok := o[namespace+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func pullSecret(name, typ, key, content string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Type:       v1.SecretType(typ),
		Data:       map[string][]byte{key: []byte(content)},
	}
}

func configJSON(name, registry, password string) *v1.Secret {
	return pullSecret(name, string(v1.SecretTypeDockerConfigJson), v1.DockerConfigJsonKey,
		fmt.Sprintf(`{"auths": {%q: {"username": "user", "password": %q}}}`, registry, password))
}

func TestEnsureImagePullSecrets(t *testing.T) {
	anonymous := []*runtimeapi.AuthConfig{nil}
	cred := func(p string) *runtimeapi.AuthConfig { return &runtimeapi.AuthConfig{Username: "user", Password: p} }
	for _, tc := range []struct {
		name       string
		secrets    []*v1.Secret // in the API
		refs       []string     // the pod's imagePullSecrets
		noObjects  bool
		plugins    pluginCreds        // the credential provider plugins' answer
		pulls      *imagepull.Limiter // the node's pull limiter
		wantPulls  []*runtimeapi.AuthConfig
		wantReason string // "" when the image is pulled
		wantEvents []string
	}{
		{
			name:       "no pull secrets: anonymous, refused",
			wantPulls:  anonymous,
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized"},
		},
		{
			name:       "dockerconfigjson",
			secrets:    []*v1.Secret{configJSON("s", "registry.example.com:5000", goodPassword)},
			refs:       []string{"s"},
			wantPulls:  []*runtimeapi.AuthConfig{cred(goodPassword)},
			wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
		},
		{
			name: "dockercfg with auth, a more specific registry",
			secrets: []*v1.Secret{pullSecret("s", string(v1.SecretTypeDockercfg), v1.DockerConfigKey,
				fmt.Sprintf(`{"http://registry.example.com:5000/team": {"auth": %q}}`, b64("user:"+goodPassword)))},
			refs:       []string{"s"},
			wantPulls:  []*runtimeapi.AuthConfig{cred(goodPassword)},
			wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
		},
		{
			name:       "each credential in turn until one succeeds",
			secrets:    []*v1.Secret{configJSON("old", "registry.example.com:5000", badPassword), configJSON("new", "*.example.com:5000", goodPassword)},
			refs:       []string{"old", "new"},
			wantPulls:  []*runtimeapi.AuthConfig{cred(badPassword), cred(goodPassword)},
			wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
		},
		{
			// Upstream's aggregate tells identical failures once.
			name:       "every credential refused: the failures aggregated",
			secrets:    []*v1.Secret{configJSON("a", "registry.example.com:5000", badPassword), configJSON("b", "registry.example.com:5000", "other")},
			refs:       []string{"a", "b"},
			wantPulls:  []*runtimeapi.AuthConfig{cred(badPassword), cred("other")},
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", `Warning Failed Failed to pull image "[^"]*": rpc error: code = Unknown desc = failed to pull and unpack image "[^"]*": failed to resolve reference "[^"]*": pulling from host \S+ failed with status code \[manifests 1\]: 401 Unauthorized`},
		},
		{
			name:       "no credential for the registry: anonymous",
			secrets:    []*v1.Secret{configJSON("s", "other.example.com", goodPassword)},
			refs:       []string{"s"},
			wantPulls:  anonymous,
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized"},
		},
		{
			name:       "other secret types are ignored",
			secrets:    []*v1.Secret{pullSecret("s", string(v1.SecretTypeOpaque), v1.DockerConfigJsonKey, `{"auths": {"registry.example.com:5000": {"username": "user", "password": "x"}}}`)},
			refs:       []string{"s"},
			wantPulls:  anonymous,
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized"},
		},
		{
			name:       "a secret that cannot be read is skipped, and told after the failure",
			secrets:    []*v1.Secret{configJSON("s", "other.example.com", goodPassword)},
			refs:       []string{"gone", "", "s", "also-gone"},
			wantPulls:  anonymous,
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized",
				`Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets \(gone, also-gone\); attempting to pull the image may not succeed.`},
		},
		{
			name:       "a secret that cannot be read, but the pull succeeds",
			secrets:    []*v1.Secret{configJSON("s", "registry.example.com:5000", goodPassword)},
			refs:       []string{"gone", "s"},
			wantPulls:  []*runtimeapi.AuthConfig{cred(goodPassword)},
			wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
		},
		{
			name: "a docker config that does not decode fails before any pull",
			secrets: []*v1.Secret{pullSecret("bad", string(v1.SecretTypeDockerConfigJson), v1.DockerConfigJsonKey,
				`{"auths": {"registry.example.com:5000": {"password": `+badPassword+`}}}`)},
			refs:       []string{"bad"},
			wantReason: "pull secret ns/bad: .dockerconfigjson: invalid JSON at offset 54",
		},
		{
			name:       "no API server: no secret is read",
			noObjects:  true,
			refs:       []string{"s"},
			wantPulls:  anonymous,
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized"},
		},
		{
			name:       "a credential provider plugin's credentials after the pull secrets'",
			secrets:    []*v1.Secret{configJSON("s", "registry.example.com:5000", badPassword)},
			refs:       []string{"s"},
			plugins:    pluginCreds{cred(goodPassword)},
			wantPulls:  []*runtimeapi.AuthConfig{cred(badPassword), cred(goodPassword)},
			wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
		},
		{
			name:       "a credential provider plugin's credentials without an API server",
			noObjects:  true,
			plugins:    pluginCreds{cred(goodPassword)},
			wantPulls:  []*runtimeapi.AuthConfig{cred(goodPassword)},
			wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
		},
		{
			name:       "registryPullQPS spent: refused before any pull",
			secrets:    []*v1.Secret{configJSON("s", "registry.example.com:5000", goodPassword)},
			refs:       []string{"s"},
			pulls:      spentLimiter(t),
			wantReason: ReasonErrImagePull,
			wantEvents: []string{"Normal Pulling .*", `Warning Failed Failed to pull image "[^"]*": pull QPS exceeded`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := &authRegistry{Runtime: fakecri.New()}
			rec := record.NewFakeRecorder(20)
			r := &Runtime{Img: img, Opts: Options{Recorder: rec, Pulls: tc.pulls}}
			if tc.plugins != nil {
				r.Opts.CredentialPlugins = tc.plugins
			}
			if !tc.noObjects {
				objs := secretObjects{}
				for _, s := range tc.secrets {
					objs[s.Namespace+"/"+s.Name] = s
				}
				r.Opts.Objects = objs
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid"},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: privateImage, ImagePullPolicy: v1.PullAlways}}}}
			for _, ref := range tc.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: ref})
			}
			out := r.ensureImage(context.Background(), pod, &pod.Spec.Containers[0], nil, NewCrashLoopBackoff(0, nil))

			if fmt.Sprint(img.pulls) != fmt.Sprint(tc.wantPulls) {
				t.Errorf("pulls with %v, want %v", img.pulls, tc.wantPulls)
			}
			switch {
			case tc.wantReason == "" && (out.err != nil || out.ref == ""):
				t.Errorf("not pulled: %v", out.err)
			case tc.wantReason != "" && (out.waiting == nil || out.waiting.Reason != tc.wantReason):
				t.Errorf("waiting %+v (%v), want reason %q", out.waiting, out.err, tc.wantReason)
			}
			expectEvents(t, rec, tc.wantEvents...)
			// Nothing the pull tells carries a password.
			told := fmt.Sprint(out.err)
			if out.waiting != nil {
				told += out.waiting.Reason + out.waiting.Message
			}
			for _, p := range []string{goodPassword, badPassword, b64("user:" + goodPassword)} {
				if strings.Contains(told, p) {
					t.Errorf("the outcome carries a credential: %s", told)
				}
			}
		})
	}
}

// pluginCreds are a credential provider plugin's credentials for every
// image.
type pluginCreds []*runtimeapi.AuthConfig

func (p pluginCreds) Lookup(context.Context, string, credprovider.Pod) []registryauth.Credential {
	var out []registryauth.Credential
	for _, a := range p {
		out = append(out, registryauth.Credential{Auth: proto.Clone(a).(*runtimeapi.AuthConfig)})
	}
	return out
}

// spentLimiter is a pull limiter whose token bucket is empty.
func spentLimiter(t *testing.T) *imagepull.Limiter {
	l := imagepull.NewLimiter(true, nil, 1, 1)
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release()
	return l
}

// TestPulledWith: what the record of a pull names, and which of a pod's
// credentials are its own pull secrets and service account.
func TestPulledWith(t *testing.T) {
	secret := registryauth.Credential{Secret: registryauth.SecretRef{UID: "u", Namespace: "ns", Name: "s"}, Hash: "h"}
	plugin := registryauth.Credential{Hash: "p"}
	forAccount := registryauth.Credential{ServiceAccount: registryauth.ServiceAccountRef{UID: "sa-uid", Namespace: "ns", Name: "puller"}, Hash: "q"}
	for _, tc := range []struct {
		name string
		used *registryauth.Credential
		want string
	}{
		{name: "anonymous", want: "{[] [] true}"},
		{name: "a plugin's", used: &plugin, want: "{[] [] true}"},
		{name: "a pull secret's", used: &secret, want: "{[{u ns s h}] [] false}"},
		{name: "a plugin's for a service account", used: &forAccount, want: "{[] [{sa-uid ns puller}] false}"},
	} {
		if got := fmt.Sprint(*pulledWith(tc.used)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := podPullSecrets([]registryauth.Credential{plugin, secret}); len(got) != 1 || got[0].Name != "s" {
		t.Errorf("the pod's pull secrets: %+v", got)
	}
	got := podCredentials([]registryauth.Credential{plugin, secret, forAccount})
	if len(got.Secrets) != 1 || got.ServiceAccount == nil || *got.ServiceAccount != (imagepull.ServiceAccount{UID: "sa-uid", Namespace: "ns", Name: "puller"}) {
		t.Errorf("the pod's credentials: %+v", got)
	}
	if got := podCredentials([]registryauth.Credential{plugin, secret}); got.ServiceAccount != nil {
		t.Errorf("a service account without a plugin's credential for it: %+v", got.ServiceAccount)
	}
}

// TestEnsureImagePulledCredentials: with the records of pulled images
// (KubeletEnsureSecretPulledImages), an image that a pod of namespace a
// pulled with its secret is pulled again, with their own credentials, for
// the pods of namespace b that lack them (and refused by the registry),
// is not present for a pod with pull policy Never, and is used without a
// pull by a pod whose own secret holds the same credentials.
func TestEnsureImagePulledCredentials(t *testing.T) {
	good := func(ns, name, uid string) *v1.Secret {
		s := configJSON(name, "registry.example.com:5000", goodPassword)
		s.Namespace, s.UID = ns, types.UID(uid)
		return s
	}
	bad := configJSON("bad", "registry.example.com:5000", badPassword)
	bad.Namespace = "b"
	objs := secretObjects{"a/s": good("a", "s", "uid-a"), "b/s": good("b", "s", "uid-b"), "b/bad": bad}
	img := &authRegistry{Runtime: fakecri.New()}
	records, err := imagepull.New(context.Background(), "", mustPullPolicy(t), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cred := func(p string) *runtimeapi.AuthConfig { return &runtimeapi.AuthConfig{Username: "user", Password: p} }
	for i, step := range []struct {
		name       string
		ns         string
		policy     v1.PullPolicy
		refs       []string
		wantPulls  []*runtimeapi.AuthConfig
		wantReason string
		wantEvents []string
		// wantCounted: the labels of kubelet_image_manager_ensure_image_requests_total
		// the request counts in (pull_policy, present_locally, pull_required).
		wantCounted [3]string
	}{
		{name: "a pulls with its secret", ns: "a", policy: v1.PullAlways, refs: []string{"s"},
			wantPulls: []*runtimeapi.AuthConfig{cred(goodPassword)}, wantEvents: []string{"Normal Pulling .*", "Normal Pulled Successfully pulled .*"},
			wantCounted: [3]string{"always", "unknown", "true"}},
		{name: "b without a secret pulls, refused", ns: "b", policy: v1.PullIfNotPresent,
			wantPulls: []*runtimeapi.AuthConfig{nil}, wantReason: ReasonErrImagePull,
			wantEvents:  []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized"},
			wantCounted: [3]string{"ifnotpresent", "true", "true"}},
		{name: "b with a wrong secret pulls, refused", ns: "b", policy: v1.PullIfNotPresent, refs: []string{"bad"},
			wantPulls: []*runtimeapi.AuthConfig{cred(badPassword)}, wantReason: ReasonErrImagePull,
			wantEvents:  []string{"Normal Pulling .*", "Warning Failed Failed to pull image .*401 Unauthorized"},
			wantCounted: [3]string{"ifnotpresent", "true", "true"}},
		{name: "b with Never is told the image is not present", ns: "b", policy: v1.PullNever, wantReason: ReasonErrImageNeverPull,
			wantEvents:  []string{`Warning ErrImageNeverPull Container image "` + privateImage + `" is not present with pull policy of Never`},
			wantCounted: [3]string{"never", "true", "true"}},
		{name: "b with the same credentials uses the image", ns: "b", policy: v1.PullIfNotPresent, refs: []string{"s"},
			wantEvents:  []string{`Normal Pulled Container image "` + privateImage + `" already present on machine and can be accessed by the pod`},
			wantCounted: [3]string{"ifnotpresent", "true", "false"}},
		{name: "a again", ns: "a", policy: v1.PullIfNotPresent, refs: []string{"s"},
			wantEvents:  []string{`Normal Pulled Container image "` + privateImage + `" already present on machine and can be accessed by the pod`},
			wantCounted: [3]string{"ifnotpresent", "true", "false"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			img.pulls = nil
			rec := record.NewFakeRecorder(20)
			r := &Runtime{Img: img, Opts: Options{Recorder: rec, Objects: objs, PullRecords: records}}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: step.ns, Name: "p", UID: types.UID(fmt.Sprint("uid-", i))},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: privateImage, ImagePullPolicy: step.policy}}}}
			for _, ref := range step.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: ref})
			}
			counted := ensureRequests(t, step.wantCounted)
			out := r.ensureImage(context.Background(), pod, &pod.Spec.Containers[0], nil, NewCrashLoopBackoff(0, nil))
			if got := ensureRequests(t, step.wantCounted) - counted; got != 1 {
				t.Errorf("ensure_image_requests_total%v grew by %v, want 1", step.wantCounted, got)
			}
			if fmt.Sprint(img.pulls) != fmt.Sprint(step.wantPulls) {
				t.Errorf("pulls with %v, want %v", img.pulls, step.wantPulls)
			}
			switch {
			case step.wantReason == "" && (out.err != nil || out.ref == ""):
				t.Errorf("image not usable: %v", out.err)
			case step.wantReason != "" && (out.waiting == nil || out.waiting.Reason != step.wantReason):
				t.Errorf("waiting %+v (%v), want reason %q", out.waiting, out.err, step.wantReason)
			}
			expectEvents(t, rec, step.wantEvents...)
		})
	}
}

// ensureRequests reads kubelet_image_manager_ensure_image_requests_total
// with labels.
func ensureRequests(t *testing.T, labels [3]string) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.EnsureImageRequests.WithLabelValues(labels[:]...).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func mustPullPolicy(t *testing.T) *imagepull.Policy {
	t.Helper()
	p, err := imagepull.NewPolicy("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

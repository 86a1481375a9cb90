package podruntime

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/podruntime/fakecri"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := &authRegistry{Runtime: fakecri.New()}
			rec := record.NewFakeRecorder(20)
			r := &Runtime{Img: img, Opts: Options{Recorder: rec}}
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

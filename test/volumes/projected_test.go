package volumes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// saDir is where the ServiceAccount admission plugin mounts the
// kube-api-access-* projected volume in every container.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// agnhost is the e2e test image (curl, and the inclusterclient command):
// in the local registry when the environment is up with the conformance
// images, as `make test` brings it up.
const agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"

// TestServiceAccountToken: the projected service-account volume every API
// pod gets (token, ca.crt, namespace), an in-cluster client using it, and
// a short-lived token.
func TestServiceAccountToken(t *testing.T) {
	n := newVolNode(t)

	t.Run("the default kube-api-access volume", func(t *testing.T) {
		p := n.NewPod("sa", nil, n.Sleeper("c"))
		p.Spec.AutomountServiceAccountToken = nil
		created := n.Run(t, p)
		vol := ""
		for _, v := range created.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
				vol = v.Name
			}
		}
		if vol == "" {
			t.Fatalf("no kube-api-access-* volume in the pod: %+v", created.Spec.Volumes)
		}
		n.Expect(t, "sa", "c", "ls "+saDir+" | tr '\\n' ' '", "ca.crt namespace token ")
		n.Expect(t, "sa", "c", "cat "+saDir+"/namespace", n.NS)
		if got, want := n.Sh(t, "sa", "c", "cat "+saDir+"/ca.crt"), strings.TrimSuffix(readFile(t, n.Env.CAFile), "\n"); got != want {
			t.Errorf("ca.crt in the pod is not the cluster CA (%s):\n%s", n.Env.CAFile, got)
		}
		// A projected volume holds a token: a tmpfs, read-only.
		fstype, opts := n.containerMount(t, "sa", "c", saDir)
		if fstype != "tmpfs" || !slices.Contains(opts, "ro") {
			t.Errorf("%s in the container: %s %v, want tmpfs ro", saDir, fstype, opts)
		}
		token := n.Sh(t, "sa", "c", "cat "+saDir+"/token")
		claims := jwtClaims(t, token)
		if claims.K8s.Namespace != n.NS || claims.K8s.Pod.Name != "sa" || claims.K8s.Pod.UID != string(created.UID) ||
			claims.K8s.ServiceAccount.Name != "default" {
			t.Errorf("token claims %+v, want bound to pod %s/sa (%s) of ServiceAccount default", claims.K8s, n.NS, created.UID)
		}
		// The token is valid: the API server takes the test for the pod's
		// service account, bound to the pod.
		n.checkIdentity(t, n.selfReview(t, token), "sa", created)
	})

	t.Run("in-cluster client in a pod", func(t *testing.T) {
		env.Require(t, env.WithConformance()) // the agnhost image
		u, err := url.Parse(n.Env.APIServerURL)
		if err != nil {
			t.Fatal(err)
		}
		// kube-apiserver listens on the host's loopback: a pod on the
		// host's network reaches it there, as KUBERNETES_SERVICE_HOST and
		// _PORT say (they take precedence over the service's).
		apiEnv := []v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: u.Hostname()}, {Name: "KUBERNETES_SERVICE_PORT", Value: u.Port()}}
		curl := v1.Container{Name: "c", Image: agnhost, ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"pause"}, Env: apiEnv}
		// client-go's rest.InClusterConfig, as upstream's e2e suite checks
		// it: it logs "status=failed" when a call to /healthz fails (a bad
		// token is a 401, not anonymous).
		client := v1.Container{Name: "client", Image: agnhost, ImagePullPolicy: v1.PullIfNotPresent,
			Args: []string{"inclusterclient", "--poll-interval", "1"}, Env: apiEnv}
		p := n.NewPod("incluster", nil, curl, client)
		p.Spec.AutomountServiceAccountToken = nil
		p.Spec.HostNetwork = true
		created := n.Run(t, p)
		raw := n.Sh(t, "incluster", "c", `curl -sS --fail --cacert `+saDir+`/ca.crt -H "Authorization: Bearer $(cat `+saDir+`/token)" `+
			`-H 'Content-Type: application/json' -X POST -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' `+
			`https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews`)
		var review authenticationv1.SelfSubjectReview
		if err := json.Unmarshal([]byte(raw), &review); err != nil {
			t.Fatalf("the pod's SelfSubjectReview: %v: %s", err, raw)
		}
		n.checkIdentity(t, &review, "incluster", created)
		var logs string
		agent.Eventually(t, "the in-cluster client calling /healthz", 30*time.Second, func() error {
			raw, err := n.Admin.CoreV1().Pods(n.NS).GetLogs("incluster", &v1.PodLogOptions{Container: "client"}).DoRaw(context.Background())
			if err != nil {
				return err
			}
			logs = string(raw)
			if strings.Count(logs, "calling /healthz") < 3 {
				return fmt.Errorf("log so far: %q", logs)
			}
			return nil
		})
		if strings.Contains(logs, "status=failed") || strings.Contains(logs, "authz_header=<empty>") {
			t.Errorf("the in-cluster client failed:\n%s", logs)
		}
	})

	t.Run("a token of expirationSeconds 600", func(t *testing.T) {
		exp := int64(600)
		p := n.NewPod("short", []v1.Volume{{Name: "short", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
			Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}},
		}}}}, n.Sleeper("c", mnt("short", "/short")))
		created := n.Run(t, p)
		token := n.Sh(t, "short", "c", "cat /short/token")
		claims := jwtClaims(t, token)
		// The lifetime asked for: the API server extends only the
		// admission plugin's default of 3607 s.
		if life := claims.Exp - claims.Iat; life != exp {
			t.Errorf("token lifetime %d s (iat %d, exp %d), want %d", life, claims.Iat, claims.Exp, exp)
		}
		if claims.K8s.Pod.UID != string(created.UID) {
			t.Errorf("token bound to %+v, want pod %s", claims.K8s.Pod, created.UID)
		}
		n.checkIdentity(t, n.selfReview(t, token), "short", created)
		// Upstream's token manager refreshes a token once 80 % of its
		// lifetime has passed (or after 24 h): 480 s here, too long to
		// wait for in a test. What makes the refresh safe is checked
		// instead: the file is the atomic writer's symlink into ..data,
		// itself a symlink to a timestamped directory that a refresh
		// replaces in one rename.
		n.Expect(t, "short", "c", "readlink /short/token", "..data/token")
		ts := n.Sh(t, "short", "c", "readlink /short/..data")
		if !regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`).MatchString(ts) {
			t.Errorf("..data points to %q, want an atomic writer's timestamped directory", ts)
		}
	})
}

// tokenClaims are the claims of a bound service-account token.
type tokenClaims struct {
	Exp int64 `json:"exp"`
	Iat int64 `json:"iat"`
	K8s struct {
		Namespace string `json:"namespace"`
		Pod       struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// jwtClaims decodes a JWT's claims (the test trusts the API server to
// check its signature: see selfReview).
func jwtClaims(t *testing.T, token string) tokenClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token is not a JWT (%d parts)", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("the token's claims: %v", err)
	}
	var c tokenClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("the token's claims: %v", err)
	}
	return c
}

// selfReview asks the API server who the bearer of token is.
func (n *volNode) selfReview(t *testing.T, token string) *authenticationv1.SelfSubjectReview {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: n.Env.APIServerURL, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: n.Env.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the pod's token: %v", err)
	}
	return r
}

// checkIdentity checks that a review's user is the namespace's default
// service account, with the pod the token is bound to.
func (n *volNode) checkIdentity(t *testing.T, r *authenticationv1.SelfSubjectReview, pod string, p *v1.Pod) {
	t.Helper()
	u := r.Status.UserInfo
	if want := "system:serviceaccount:" + n.NS + ":default"; u.Username != want {
		t.Errorf("the token's user is %q, want %s", u.Username, want)
	}
	if name, uid := u.Extra["authentication.kubernetes.io/pod-name"], u.Extra["authentication.kubernetes.io/pod-uid"]; !slices.Equal(name, []string{pod}) || !slices.Equal(uid, []string{string(p.UID)}) {
		t.Errorf("the token is bound to pod %v (%v), want %s (%s)", name, uid, pod, p.UID)
	}
}

// readFile is the content of a file of the test's host.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

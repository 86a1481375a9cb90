package apisource

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/actorlet/actorlet/test/env"
)

// TestRealAPIServer reads, as the environment's node, the objects of a pod
// bound to it and of a pod bound to another node, through the real
// kube-apiserver with its Node authorizer. No actorlet runs: the runtime
// lock is held so that none runs the pods meanwhile.
func TestRealAPIServer(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	env.HoldRuntime(t)
	admin := e.AdminClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	ns := "apisource-" + rand.String(6)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}
		_ = admin.CoreV1().Pods(ns).DeleteCollection(context.Background(), zero, metav1.ListOptions{})
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// Pods wait for the namespace's default service account.
	poll(t, ctx, "the default service account", func() error {
		_, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	for _, name := range []string{"mine", "theirs"} {
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"k": []byte(name)}}
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node, secret string) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false),
				Containers: []v1.Container{{Name: "c", Image: e.BusyboxImage}},
				Volumes: []v1.Volume{secretVol(secret), {Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
					LocalObjectReference: v1.LocalObjectReference{Name: "cm-" + name}}}},
					// The node may ask for a token only for an audience
					// one of its pods projects (none: the API server's).
					{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(600)), Path: "token"}}}}}},
				},
			},
		}
		p, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine := pod("mine", e.NodeName, "mine")
	theirs := pod("theirs", "apisource-other-node", "theirs")

	var (
		mu      sync.Mutex
		changed = map[string]int{}
	)
	s := New(ctx, e.NodeClient(t), Options{OnChange: func(kind, namespace, name string) {
		mu.Lock()
		defer mu.Unlock()
		changed[kind+" "+namespace+"/"+name]++
	}})
	s.RegisterPod(mine)
	s.RegisterPod(theirs)

	// The Node authorizer learns of a pod's binding a moment after it is
	// made: until then the node is refused, as the volume manager's
	// retries see it.
	poll(t, ctx, "the secret of the node's pod", func() error {
		sec, err := s.Secret(ctx, ns, "mine")
		if err == nil && string(sec.Data["k"]) != "mine" {
			t.Fatalf("secret mine has %q", sec.Data["k"])
		}
		return err
	})
	if _, err := s.Secret(ctx, ns, "theirs"); !apierrors.IsForbidden(err) {
		t.Errorf("the secret of another node's pod: %v, want Forbidden", err)
	}

	// A missing ConfigMap, then created and changed: each a change.
	poll(t, ctx, "NotFound for the missing config map", func() error {
		if _, err := s.ConfigMap(ctx, ns, "cm-mine"); !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	cms := admin.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-mine"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := func(n int) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if got := changed[KindConfigMap+" "+ns+"/cm-mine"]; got < n {
				return &waitingError{"OnChange called " + string(rune('0'+got)) + " times"}
			}
			return nil
		}
	}
	poll(t, ctx, "OnChange for the created config map", seen(1))
	if cm, err := s.ConfigMap(ctx, ns, "cm-mine"); err != nil || cm.Data["k"] != "1" {
		t.Fatalf("created config map: %v, %v", cm, err)
	}
	if _, err := cms.Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-mine"}, Data: map[string]string{"k": "2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "OnChange for the updated config map", seen(2))
	if cm, err := s.ConfigMap(ctx, ns, "cm-mine"); err != nil || cm.Data["k"] != "2" {
		t.Fatalf("updated config map: %v, %v", cm, err)
	}

	// A token bound to the node's pod, which the API server authenticates
	// as the pod's service account; none for another node's pod.
	proj := &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(600)), Path: "token"}
	tok, err := s.ServiceAccountToken(ctx, mine, proj)
	if err != nil {
		t.Fatalf("token for the node's pod: %v", err)
	}
	if again, err := s.ServiceAccountToken(ctx, mine, proj); err != nil || again != tok {
		t.Errorf("second request: a new token (err %v), want the cached one", err)
	}
	review, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok.Token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := review.Status; !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" ||
		strings.Join(st.User.Extra["authentication.kubernetes.io/pod-name"], "") != "mine" {
		t.Errorf("token review: authenticated %v as %q, pod %v, error %q", st.Authenticated, st.User.Username,
			st.User.Extra["authentication.kubernetes.io/pod-name"], st.Error)
	}
	if _, err := s.ServiceAccountToken(ctx, theirs, proj); !apierrors.IsForbidden(err) {
		t.Errorf("token for another node's pod: %v, want Forbidden", err)
	}

	// A cluster trust bundle by name, read as the node.
	ca := selfSigned(t, "apisource-test")
	bundle := "apisource-" + rand.String(6)
	if _, err := admin.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: bundle}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: ca},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CertificatesV1().ClusterTrustBundles().Delete(context.Background(), bundle, metav1.DeleteOptions{})
	})
	poll(t, ctx, "the cluster trust bundle", func() error {
		got, err := s.ClusterTrustBundles(ctx, &v1.ClusterTrustBundleProjection{Name: &bundle})
		if err == nil && string(got) != ca {
			return &waitingError{"bundle differs"}
		}
		return err
	})

	s.UnregisterPod(mine)
	s.UnregisterPod(theirs)
	if w := s.objects.watching(); len(w) != 0 {
		t.Errorf("still watching %v after every pod left", w)
	}
}

type waitingError struct{ s string }

func (e *waitingError) Error() string { return e.s }

// poll calls check until it returns nil, and fails the test with its last
// error when ctx ends first.
func poll(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

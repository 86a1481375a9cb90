package containerenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestPulledImageCredentials: KubeletEnsureSecretPulledImages (beta, on
// by default) with the default policy, NeverVerifyPreloadedImages. Once
// a pod of namespace A pulled the private image with its pull secret, a
// pod of namespace B may use the image on the node only with the same
// credentials: without a secret, or with a wrong one, its container
// waits on a pull that the registry refuses (401), even with pull policy
// IfNotPresent, and with Never it is told the image is not present; with
// a secret of its own holding the credentials it runs without a pull. The
// record is upstream's file under the root directory, without the
// credentials themselves.
func TestPulledImageCredentials(t *testing.T) {
	a := newEnvNode(t)
	e := a.Env
	if e.PrivateImage == "" {
		t.Fatal("hack/node-env env exports no ACTORLET_PRIVATE_IMAGE: run hack/node-env up")
	}
	b := &envNode{APIPods: &agent.APIPods{ClusterNode: a.ClusterNode, Cfg: a.Cfg, NS: a.Namespace("envb")}}
	const wrongPassword = "not-the-password-7c2d"
	secret := func(t *testing.T, n *envNode, name, password string) string {
		t.Helper()
		content := fmt.Sprintf(`{"auths": {%q: {"username": %q, "password": %q}}}`, e.AuthRegistry, e.AuthRegistryUser, password)
		_, err := n.Admin.CoreV1().Secrets(n.NS).Create(context.Background(), &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(content)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create secret %s/%s: %v", n.NS, name, err)
		}
		return name
	}
	privatePod := func(n *envNode, name string, policy v1.PullPolicy, secrets ...string) *v1.Pod {
		c := n.Sleeper("c")
		c.Image, c.ImagePullPolicy = e.PrivateImage, policy
		p := n.NewPod(name, nil, c)
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
		}
		return p
	}
	refused := func(t *testing.T, n *envNode, name string, withCredentials bool) {
		t.Helper()
		agent.Eventually(t, "container c of "+name+" waiting on its image", 60*time.Second, func() error {
			cs, err := n.ContainerState(name, "c")
			if err != nil {
				return err
			}
			if w := cs.State.Waiting; w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff") {
				return fmt.Errorf("container c: %+v", cs.State)
			}
			return nil
		})
		n.Event(t, name, "Failed", fmt.Sprintf("Failed to pull image %q", e.PrivateImage), e.PullUnauthorized(withCredentials))
		if cs, err := n.ContainerState(name, "c"); err != nil || cs.State.Running != nil || cs.RestartCount != 0 {
			t.Errorf("container c of %s ran: %+v, %v", name, cs, err)
		}
	}

	t.Run("namespace A pulls with its secret", func(t *testing.T) {
		// Always: a pull whatever is on the node, so that the record is
		// this node's.
		a.Run(t, privatePod(a, "puller", v1.PullAlways, secret(t, a, "regcred", e.AuthRegistryPassword)))
		a.Event(t, "puller", "Pulled", fmt.Sprintf("Successfully pulled image %q", e.PrivateImage))
	})

	t.Run("namespace B without a secret", func(t *testing.T) {
		b.Create(t, privatePod(b, "nosecret", v1.PullIfNotPresent))
		refused(t, b, "nosecret", false)
	})

	t.Run("namespace B with a wrong secret", func(t *testing.T) {
		b.Create(t, privatePod(b, "wrong", v1.PullIfNotPresent, secret(t, b, "regcred-wrong", wrongPassword)))
		refused(t, b, "wrong", true)
	})

	t.Run("namespace B with pull policy Never", func(t *testing.T) {
		b.Create(t, privatePod(b, "never", v1.PullNever))
		b.Waiting(t, "never", "c", "ErrImageNeverPull", fmt.Sprintf("Container image %q is not present with pull policy of Never", e.PrivateImage))
	})

	t.Run("namespace B with its own secret", func(t *testing.T) {
		b.Run(t, privatePod(b, "own", v1.PullIfNotPresent, secret(t, b, "regcred", e.AuthRegistryPassword)))
		b.Event(t, "own", "Pulled", fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", e.PrivateImage))
	})

	t.Run("namespace A again", func(t *testing.T) {
		a.Run(t, privatePod(a, "again", v1.PullIfNotPresent, "regcred"))
		a.Event(t, "again", "Pulled", fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", e.PrivateImage))
	})

	t.Run("the record", func(t *testing.T) {
		dir := filepath.Join(a.RootDir, "image_manager", "pulled")
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, ent := range entries {
			raw, err := os.ReadFile(filepath.Join(dir, ent.Name()))
			if err != nil {
				t.Fatal(err)
			}
			s := string(raw)
			if strings.Contains(s, e.AuthRegistryPassword) || strings.Contains(s, wrongPassword) {
				t.Errorf("a password in %s: %s", ent.Name(), s)
			}
			if strings.Contains(s, `"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1"`) &&
				strings.Contains(s, `"namespace":"`+a.NS+`","name":"regcred"`) && strings.Contains(s, `"namespace":"`+b.NS+`","name":"regcred"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no record in %s of the image pulled with %s/regcred and used with %s/regcred", dir, a.NS, b.NS)
		}
	})

	t.Run("no credential in the log or the events", func(t *testing.T) {
		a.noneTold(t, e.AuthRegistryPassword, wrongPassword)
		b.noneTold(t, e.AuthRegistryPassword, wrongPassword)
	})
}

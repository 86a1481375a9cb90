package containerenv

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestImagePullSecrets: the private image of the environment's registry
// with authentication, pulled with the pod's image pull secret
// (kubernetes.io/dockerconfigjson, kubernetes.io/dockercfg), and refused
// with the registry's 401 without one, with a wrong password, or with a
// secret that does not exist; no credential in any line of actorlet's log
// nor in the pods' events.
func TestImagePullSecrets(t *testing.T) {
	n := newEnvNode(t)
	e := n.Env
	if e.PrivateImage == "" {
		t.Fatal("hack/node-env env exports no ACTORLET_PRIVATE_IMAGE: run hack/node-env up")
	}
	const wrongPassword = "not-the-password-5e1f"
	userPass := e.AuthRegistryUser + ":" + e.AuthRegistryPassword
	auth := base64.StdEncoding.EncodeToString([]byte(userPass))

	secret := func(t *testing.T, name string, typ v1.SecretType, key, content string) string {
		t.Helper()
		_, err := n.Admin.CoreV1().Secrets(n.NS).Create(context.Background(), &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ,
			Data: map[string][]byte{key: []byte(content)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create secret %s: %v", name, err)
		}
		return name
	}
	// privatePod is a pod of the private image, pulled at each start
	// (Always) with the pull secrets named, after the image was removed
	// from containerd so that the pull is a real one.
	privatePod := func(t *testing.T, name string, secrets ...string) *v1.Pod {
		t.Helper()
		p := n.FreshPullPod(t, name, e.PrivateImage)
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
		}
		return p
	}
	// refused waits for the container to wait on its image and for the
	// Failed event that quotes the registry's answer.
	refused := func(t *testing.T, name string, withCredentials bool) {
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
	}

	t.Run("dockerconfigjson", func(t *testing.T) {
		s := secret(t, "regcred-json", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey,
			fmt.Sprintf(`{"auths": {%q: {"username": %q, "password": %q}}}`, e.AuthRegistry, e.AuthRegistryUser, e.AuthRegistryPassword))
		n.Run(t, privatePod(t, "json", s))
		n.Event(t, "json", "Pulled", fmt.Sprintf("Successfully pulled image %q", e.PrivateImage))
		n.Expect(t, "json", "c", "echo pulled", "pulled")
	})

	t.Run("dockercfg with auth, a registry with scheme and path", func(t *testing.T) {
		s := secret(t, "regcred-cfg", v1.SecretTypeDockercfg, v1.DockerConfigKey,
			fmt.Sprintf(`{"http://%s/private": {"auth": %q, "email": "test@example.com"}}`, e.AuthRegistry, auth))
		n.Run(t, privatePod(t, "cfg", s))
		n.Event(t, "cfg", "Pulled", fmt.Sprintf("Successfully pulled image %q", e.PrivateImage))
	})

	t.Run("a wrong password, then the right one", func(t *testing.T) {
		// Each matching credential is tried in turn: the most specific
		// registry first, then the pod's order.
		wrong := secret(t, "regcred-wrong", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey,
			fmt.Sprintf(`{"auths": {"%s/private/busybox": {"username": %q, "password": %q}}}`, e.AuthRegistry, e.AuthRegistryUser, wrongPassword))
		right := secret(t, "regcred-right", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey,
			fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, e.AuthRegistry, auth))
		n.Run(t, privatePod(t, "rotated", right, wrong))
	})

	t.Run("no pull secret", func(t *testing.T) {
		n.Create(t, privatePod(t, "anonymous"))
		refused(t, "anonymous", false)
	})

	t.Run("a wrong password", func(t *testing.T) {
		s := secret(t, "regcred-bad", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey,
			fmt.Sprintf(`{"auths": {%q: {"username": %q, "password": %q}}}`, e.AuthRegistry, e.AuthRegistryUser, wrongPassword))
		n.Create(t, privatePod(t, "wrong", s))
		refused(t, "wrong", true)
	})

	t.Run("a pull secret that does not exist", func(t *testing.T) {
		n.Create(t, privatePod(t, "missing", "no-such-secret"))
		refused(t, "missing", false)
		n.Event(t, "missing", "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (no-such-secret); attempting to pull the image may not succeed.")
	})

	t.Run("no credential in the log or the events", func(t *testing.T) {
		n.noneTold(t, e.AuthRegistryPassword, wrongPassword, auth)
	})
}

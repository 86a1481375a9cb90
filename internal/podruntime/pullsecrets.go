package podruntime

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/internal/credprovider"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/registryauth"
)

// events.FailedToRetrieveImagePullSecret is upstream's event, on the pod,
// after a failed pull when some of the pod's pull secrets could not be
// read.

// CredentialPlugins gives the credentials of the image credential
// provider plugins for an image, in the order to try them.
type CredentialPlugins interface {
	Lookup(ctx context.Context, image string, pod credprovider.Pod) []registryauth.Credential
}

// pullCredentials returns the credentials to pull image with for the pod,
// in the order to try them (none: the pull is anonymous): the pod's pull
// secrets', then the credential provider plugins', as upstream's union
// keyring; and the names of the pod's pull secrets that could not be
// read. As upstream's
// getPullSecretsForPod, a secret that cannot be read is logged and
// skipped: the pull may still succeed without it. A secret whose docker
// config does not decode is an error, as upstream's MakeDockerKeyring.
// Without Objects (no API server) there is nothing to read: only static
// pods run then, and they cannot refer to secrets.
func (r *Runtime) pullCredentials(ctx context.Context, pod *v1.Pod, image string) (creds []registryauth.Credential, missing []string, err error) {
	creds, missing, err = r.secretCredentials(ctx, pod, image)
	if err != nil {
		return nil, missing, err
	}
	if r.Opts.CredentialPlugins != nil {
		creds = append(creds, r.Opts.CredentialPlugins.Lookup(ctx, image, credprovider.Pod{Namespace: pod.Namespace,
			Name: pod.Name, UID: pod.UID, ServiceAccountName: pod.Spec.ServiceAccountName})...)
	}
	return creds, missing, nil
}

// secretCredentials is pullCredentials from the pod's pull secrets only.
func (r *Runtime) secretCredentials(ctx context.Context, pod *v1.Pod, image string) (creds []registryauth.Credential, missing []string, err error) {
	if r.Opts.Objects == nil || len(pod.Spec.ImagePullSecrets) == 0 {
		return nil, nil, nil
	}
	var secrets []v1.Secret
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			// API validation let such entries in; upstream ignores them.
			continue
		}
		sctx, cancel := r.callCtx(ctx)
		s, err := r.Opts.Objects.Secret(sctx, pod.Namespace, ref.Name)
		cancel()
		if err != nil {
			klog.FromContext(ctx).Info("Unable to retrieve pull secret, the image pull may not succeed.",
				"pod", klog.KObj(pod), "secret", klog.KRef(pod.Namespace, ref.Name), "err", err)
			missing = append(missing, ref.Name)
			continue
		}
		secrets = append(secrets, *s)
	}
	keyring, err := registryauth.FromSecrets(secrets)
	if err != nil {
		return nil, missing, err
	}
	return keyring.LookupTracked(image), missing, nil
}

// podPullSecrets are the pull secrets among creds, as the records of
// pulled images name them (upstream's getPodCredentials); the plugins'
// credentials are not a pod's own.
func podPullSecrets(creds []registryauth.Credential) []imagepull.Secret {
	var out []imagepull.Secret
	for _, c := range creds {
		if !c.FromSecret() {
			continue
		}
		out = append(out, imagepull.Secret{UID: c.Secret.UID, Namespace: c.Secret.Namespace, Name: c.Secret.Name, CredentialHash: c.Hash})
	}
	return out
}

// podCredentials are the pod's credentials among creds, as the records
// of pulled images name them (upstream's getPodCredentials): its pull
// secrets, and the service account of the first credential a plugin gave
// for one (a pod has one service account).
func podCredentials(creds []registryauth.Credential) imagepull.PodCredentials {
	out := imagepull.PodCredentials{Secrets: podPullSecrets(creds)}
	for _, c := range creds {
		if c.FromServiceAccount() {
			out.ServiceAccount = &imagepull.ServiceAccount{UID: c.ServiceAccount.UID, Namespace: c.ServiceAccount.Namespace, Name: c.ServiceAccount.Name}
			break
		}
	}
	return out
}

// pulledWith is what the record of a pull says it was pulled with, as
// upstream's trackedToImagePullCreds: the pull secret whose credentials
// the registry accepted, or the service account a credential provider
// plugin gave them for; for a pull without credentials or with a plugin's
// given for no account, that every pod of the node may use the image.
func pulledWith(used *registryauth.Credential) *imagepull.Credentials {
	switch {
	case used == nil:
		return &imagepull.Credentials{NodePodsAccessible: true}
	case used.FromSecret():
		return &imagepull.Credentials{KubernetesSecrets: podPullSecrets([]registryauth.Credential{*used})}
	case used.FromServiceAccount():
		return &imagepull.Credentials{KubernetesServiceAccounts: []imagepull.ServiceAccount{*podCredentials([]registryauth.Credential{*used}).ServiceAccount}}
	}
	return &imagepull.Credentials{NodePodsAccessible: true}
}

// pullImage pulls as upstream's runtime manager does: anonymously when
// there are no credentials, else with each in turn until one succeeds,
// which it returns (nil: the pull was anonymous). The failure is that of
// every try, aggregated as upstream (the registry's answer to each); the
// runtime's errors name the image and the registry, never the
// credentials.
func (r *Runtime) pullImage(ctx context.Context, spec *runtimeapi.ImageSpec, sandbox *runtimeapi.PodSandboxConfig, creds []registryauth.Credential) (string, *registryauth.Credential, error) {
	if len(creds) == 0 {
		resp, err := r.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, SandboxConfig: sandbox})
		return resp.GetImageRef(), nil, err
	}
	var errs []error
	for i := range creds {
		resp, err := r.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, Auth: creds[i].Auth, SandboxConfig: sandbox})
		if err == nil {
			return resp.GetImageRef(), &creds[i], nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", nil, utilerrors.NewAggregate(errs)
}

// missingSecretsEvent records upstream's event after a failed pull when
// some pull secrets could not be read, which may be why.
func (r *Runtime) missingSecretsEvent(pod *v1.Pod, missing []string) {
	if len(missing) == 0 {
		return
	}
	r.podEvent(pod, v1.EventTypeWarning, events.FailedToRetrieveImagePullSecret,
		fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")))
}

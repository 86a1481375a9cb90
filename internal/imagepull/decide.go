package imagepull

import (
	"cmp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Record is upstream's ImagePulledRecord: the credentials an image (by
// the runtime's image ID) was pulled with, per image name.
type Record = kubeletconfigv1beta1.ImagePulledRecord

// Credentials are the credentials of one pull (upstream's
// ImagePullCredentials): one pull secret, or NodePodsAccessible for a
// pull that needed none of a pod's secrets.
type Credentials = kubeletconfigv1beta1.ImagePullCredentials

// Secret is a pull secret's coordinates and the hash of the credentials
// it gave (upstream's ImagePullSecret).
type Secret = kubeletconfigv1beta1.ImagePullSecret

// ServiceAccount is the coordinates of a service account a credential
// provider plugin gave credentials for (upstream's ImagePullServiceAccount).
type ServiceAccount = kubeletconfigv1beta1.ImagePullServiceAccount

// PodCredentials are what a pod has to use an image another pod pulled:
// its pull secrets that apply to the image, and the service account a
// credential provider plugin in service account token mode gives
// credentials for (nil: none), as upstream's getPodCredentials.
type PodCredentials struct {
	Secrets        []Secret
	ServiceAccount *ServiceAccount
}

// rememberLimit is upstream's writeRecordWhileMatchingLimit: past this
// many secrets in a record, a secret that matches by its hash only is no
// longer added to it, so that namespaces coming and going do not grow a
// record without bound.
const rememberLimit = 100

// verdict is what decide found: whether the pod must pull the image to
// use it, and the pod's secret to add to the record because it matched
// one recorded under other coordinates (the same credentials in another
// secret) or with another hash (the secret's credentials changed).
type verdict struct {
	mustPull bool
	remember *Secret
}

// decide is upstream's MustAttemptImagePull once the records are read:
// whether a pod may use image (its container's image field), present on
// the node, without pulling it. record is the image's ImagePulledRecord
// (nil: none), pulledByKubelet whether a record or an intent of it
// exists. podCreds returns the pod's credentials that apply to the image;
// it is only called when the decision depends on them, and its error
// makes the pod pull (and fail as the pull would).
func decide(policy *Policy, image string, record *Record, pulledByKubelet bool, podCreds func() (PodCredentials, error)) (verdict, error) {
	if !policy.requireVerification(image, pulledByKubelet) {
		return verdict{}, nil
	}
	if record == nil {
		return verdict{mustPull: true}, nil
	}
	name, err := trimTagDigest(image)
	if err != nil {
		return verdict{mustPull: true}, nil
	}
	creds, ok := record.CredentialMapping[name]
	if !ok {
		return verdict{mustPull: true}, nil
	}
	if creds.NodePodsAccessible {
		return verdict{}, nil
	}
	if len(creds.KubernetesSecrets) == 0 && len(creds.KubernetesServiceAccounts) == 0 {
		return verdict{mustPull: true}, nil
	}
	pod, err := podCreds()
	if err != nil {
		return verdict{mustPull: true}, err
	}
	for _, s := range pod.Secrets {
		for _, recorded := range creds.KubernetesSecrets {
			// An empty hash is one upstream failed to compute: it
			// matches nothing.
			sameHash := recorded.CredentialHash != "" && s.CredentialHash == recorded.CredentialHash
			sameSecret := s.UID == recorded.UID && s.Namespace == recorded.Namespace && s.Name == recorded.Name
			if !sameHash && !sameSecret {
				continue
			}
			v := verdict{}
			if (!sameHash || !sameSecret) && len(creds.KubernetesSecrets) < rememberLimit {
				v.remember = &s
			}
			return v, nil
		}
	}
	if pod.ServiceAccount != nil && slices.Contains(creds.KubernetesServiceAccounts, *pod.ServiceAccount) {
		return verdict{}, nil
	}
	return verdict{mustPull: true}, nil
}

// merge is upstream's pulledRecordMergeNewCreds: record (nil: none yet,
// for imageRef) with the credentials of a pull of image added; creds nil
// records the image as pulled with no credentials known, which makes
// every pod verify its own. It reports whether anything changed; the
// record passed in is never modified.
func merge(record *Record, imageRef, image string, creds *Credentials, now time.Time) (*Record, bool, error) {
	name, err := trimTagDigest(image)
	if err != nil {
		return nil, false, err
	}
	if record == nil {
		r := &Record{ImageRef: imageRef, LastUpdatedTime: metav1.NewTime(now),
			CredentialMapping: map[string]Credentials{}}
		if creds != nil {
			r.CredentialMapping[name] = *creds.DeepCopy()
		}
		return r, true, nil
	}
	if creds == nil || (!creds.NodePodsAccessible && len(creds.KubernetesSecrets) == 0 && len(creds.KubernetesServiceAccounts) == 0) {
		return record, false, nil
	}
	current, found := record.CredentialMapping[name]
	var next Credentials
	switch {
	case !found:
		next = *creds.DeepCopy()
	case current.NodePodsAccessible:
		return record, false, nil
	case creds.NodePodsAccessible:
		next = Credentials{NodePodsAccessible: true}
	case len(creds.KubernetesSecrets) > 0:
		secrets, changed := mergeSecrets(current.KubernetesSecrets, creds.KubernetesSecrets)
		if !changed {
			return record, false, nil
		}
		next = *current.DeepCopy()
		next.KubernetesSecrets = secrets
	default:
		sas, changed := mergeServiceAccounts(current.KubernetesServiceAccounts, creds.KubernetesServiceAccounts)
		if !changed {
			return record, false, nil
		}
		next = *current.DeepCopy()
		next.KubernetesServiceAccounts = sas
	}
	r := record.DeepCopy()
	if r.CredentialMapping == nil {
		r.CredentialMapping = map[string]Credentials{}
	}
	r.CredentialMapping[name] = next
	r.LastUpdatedTime = metav1.NewTime(now)
	return r, true, nil
}

// mergeSecrets is upstream's mergePullSecrets: one entry per secret
// (namespace, name, UID), the new hash winning, sorted by namespace, name
// and UID.
func mergeSecrets(current, added []Secret) ([]Secret, bool) {
	type coords struct{ uid, namespace, name string }
	hashes := map[coords]string{}
	for _, s := range current {
		hashes[coords{s.UID, s.Namespace, s.Name}] = s.CredentialHash
	}
	changed := false
	for _, s := range added {
		k := coords{s.UID, s.Namespace, s.Name}
		if h, ok := hashes[k]; !ok || h != s.CredentialHash {
			hashes[k], changed = s.CredentialHash, true
		}
	}
	if !changed {
		return current, false
	}
	out := make([]Secret, 0, len(hashes))
	for k, h := range hashes {
		out = append(out, Secret{UID: k.uid, Namespace: k.namespace, Name: k.name, CredentialHash: h})
	}
	slices.SortFunc(out, func(a, b Secret) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
	})
	return out, true
}

// mergeServiceAccounts is upstream's mergePullServiceAccounts, kept so
// that a record upstream wrote keeps its service accounts when actorlet
// adds to it.
func mergeServiceAccounts(current, added []kubeletconfigv1beta1.ImagePullServiceAccount) ([]kubeletconfigv1beta1.ImagePullServiceAccount, bool) {
	out := slices.Clone(current)
	changed := false
	for _, s := range added {
		if !slices.Contains(out, s) {
			out, changed = append(out, s), true
		}
	}
	if !changed {
		return current, false
	}
	slices.SortFunc(out, func(a, b kubeletconfigv1beta1.ImagePullServiceAccount) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
	})
	return out, true
}

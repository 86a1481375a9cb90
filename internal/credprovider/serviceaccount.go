package credprovider

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
)

// Pod is the pod an image is pulled for, as a plugin in service account
// token mode needs it: the token is bound to the pod and asked for its
// service account.
type Pod struct {
	Namespace, Name    string
	UID                types.UID
	ServiceAccountName string
}

// ServiceAccounts reads service accounts and asks for their tokens, as the
// node. Token may return a cached token still valid for the request.
type ServiceAccounts interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Token(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// errStandalone is upstream's answer for a service account without an
// API server.
var errStandalone = errors.New("cannot get ServiceAccounts when kubelet is in standalone mode")

// serviceAccounts is a provider's tokenAttributes: what it is told of
// the pod's service account and how its answers are cached.
type serviceAccounts struct {
	accounts           ServiceAccounts // nil without an API server
	audience           string
	require            bool
	required, optional []string
	cacheType          kubeletconfigv1.ServiceAccountTokenCacheType
}

func newServiceAccounts(ta *kubeletconfigv1.ServiceAccountTokenAttributes, accounts ServiceAccounts) *serviceAccounts {
	return &serviceAccounts{accounts: accounts, audience: ta.ServiceAccountTokenAudience,
		require:  ta.RequireServiceAccount != nil && *ta.RequireServiceAccount,
		required: ta.RequiredServiceAccountAnnotationKeys, optional: ta.OptionalServiceAccountAnnotationKeys,
		cacheType: ta.CacheType}
}

// requiredAnnotationNotFound is a service account without an annotation
// the provider requires: the plugin is not run for it, as upstream, since
// the annotation may be how a workload opts in.
type requiredAnnotationNotFound string

func (e requiredAnnotationNotFound) Error() string {
	return fmt.Sprintf("required annotation %s not found", string(e))
}

// account returns the service account's UID and the annotations the
// plugin is told of: every required one (its absence is
// requiredAnnotationNotFound) and the optional ones it has.
func (s *serviceAccounts) account(ctx context.Context, namespace, name string) (types.UID, map[string]string, error) {
	if s.accounts == nil {
		return "", nil, errStandalone
	}
	sa, err := s.accounts.ServiceAccount(ctx, namespace, name)
	if err != nil {
		return "", nil, err
	}
	annotations := make(map[string]string, len(s.required)+len(s.optional))
	for _, k := range s.required {
		v, ok := sa.Annotations[k]
		if !ok {
			return "", nil, requiredAnnotationNotFound(k)
		}
		annotations[k] = v
	}
	for _, k := range s.optional {
		if v, ok := sa.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	return sa.UID, annotations, nil
}

// token returns a token of the pod's service account for the plugin's
// audience, bound to the pod, with the API server's default lifetime, as
// upstream asks for it.
func (s *serviceAccounts) token(ctx context.Context, pod Pod, uid types.UID) (string, error) {
	if s.accounts == nil {
		return "", errStandalone
	}
	tr, err := s.accounts.Token(ctx, pod.Namespace, pod.ServiceAccountName, &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: uid},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{s.audience},
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// accountKey is the part of a cache key for answers given for a service
// account: its namespace, name, UID and the annotations told, and with the
// Token cache type the token's hash, so that an answer is reused only for
// the same token. The parts are quoted, so no two differ only in where
// one part ends.
func accountKey(pod Pod, uid types.UID, annotations map[string]string, cacheType kubeletconfigv1.ServiceAccountTokenCacheType, tokenHash string) string {
	key := fmt.Sprintf("%q %q %q %s", pod.Namespace, pod.ServiceAccountName, uid, quotedAnnotations(annotations))
	if cacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
		key += fmt.Sprintf(" token %q", tokenHash)
	}
	return key
}

// quotedAnnotations is the annotations, sorted by key and quoted.
func quotedAnnotations(annotations map[string]string) string {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q,", k, annotations[k])
	}
	return b.String()
}

// tokenHash is the token's sha256, as upstream keys answers by it; the
// token itself is never kept in a key.
func tokenHash(token string) string {
	if token == "" {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(token)))
}

package apisource

import (
	"context"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/internal/volume"
)

// Options are what New needs besides the client.
type Options struct {
	// OnChange is called, from a watch's goroutine, when a watched
	// ConfigMap or Secret (kind KindConfigMap or KindSecret) is added,
	// updated or deleted, so that the pods that use it are refreshed; and
	// with KindPod and the pod's namespace and name when one of its pod
	// certificates was issued, refreshed, denied or failed. It must return
	// quickly (send a message, say). Nil: nothing is told.
	OnChange func(kind, namespace, name string)
	// Clock is the token cache's and the pod certificates' clock; the
	// real one when nil.
	Clock clock.WithTicker
	// Log receives what goes wrong in the background (a token refresh
	// that failed while the cached token is still valid). Never a token or
	// a secret's content.
	Log zerolog.Logger
	// ChangeDetection is configMapAndSecretChangeDetectionStrategy:
	// StrategyWatch (also when empty), StrategyCache or StrategyGet. Only
	// Watch tells OnChange of ConfigMaps and Secrets; with the others,
	// pods learn changes when their volumes are refreshed.
	ChangeDetection string
}

// Sources reads the objects pods' volumes use, as the node: it implements
// volume.Sources. Its methods are safe for concurrent use.
type Sources struct {
	client  kubernetes.Interface
	objects *objectCache
	tokens  *tokenManager
	bundles *trustBundles
	certs   *podCertificates
	// watch is the Watch strategy; cache, the Cache strategy's objects
	// (nil otherwise).
	watch bool
	cache *ttlCache

	mu sync.Mutex
	// registered holds the objects each registered pod references.
	registered map[types.UID]map[objectKey]struct{}
}

var _ volume.Sources = (*Sources)(nil)

// New returns the sources read through client, the node's client. Its
// watches and its token cache's cleanup run until ctx is done.
func New(ctx context.Context, client kubernetes.Interface, opts Options) *Sources {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	s := &Sources{
		client:     client,
		objects:    newObjectCache(ctx, client, opts.OnChange),
		tokens:     newTokenManager(client, clk, opts.Log),
		bundles:    newTrustBundles(ctx, client),
		certs:      newPodCertificates(ctx, client, clk, opts.OnChange, opts.Log),
		registered: map[types.UID]map[objectKey]struct{}{},
		watch:      opts.ChangeDetection == "" || opts.ChangeDetection == StrategyWatch,
	}
	if opts.ChangeDetection == StrategyCache {
		s.cache = newTTLCache(clk)
	}
	go s.tokens.cleanupEvery(ctx, tokenGCPeriod)
	return s
}

// RegisterPod starts watching the ConfigMaps and Secrets the pod references
// that no other registered pod does, and stops watching those an earlier
// version of the pod referenced and no longer does; and starts asking for
// the certificates of its podCertificate projections. It does not wait for
// the API server. Registering the same pod again is harmless.
func (s *Sources) RegisterPod(pod *v1.Pod) {
	s.certs.track(pod)
	refs := references(pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.registered[pod.UID]
	s.registered[pod.UID] = refs
	if !s.watch {
		// Get reads every time; Cache reads again for a pod registering.
		if s.cache != nil {
			for k := range refs {
				s.cache.invalidate(k)
			}
		}
		return
	}
	for k := range refs {
		if _, ok := prev[k]; !ok {
			s.objects.addReference(k, pod.UID)
		}
	}
	for k := range prev {
		if _, ok := refs[k]; !ok {
			s.objects.deleteReference(k, pod.UID)
		}
	}
}

// UnregisterPod drops the pod's references, stopping the watches of the
// objects no other registered pod references, and forgets its
// service-account tokens and pod certificates. Unregistering a pod not
// registered is harmless.
func (s *Sources) UnregisterPod(pod *v1.Pod) {
	s.mu.Lock()
	prev := s.registered[pod.UID]
	delete(s.registered, pod.UID)
	for k := range prev {
		s.objects.deleteReference(k, pod.UID)
	}
	s.mu.Unlock()
	s.DeleteServiceAccountToken(pod.UID)
	s.certs.forget(pod.UID)
}

// ConfigMap returns the ConfigMap from its watch once the watch has listed
// (waiting within ctx), an error for which apierrors.IsNotFound holds when
// it does not exist, or the watch's error (Forbidden when the node may not
// read it). One no registered pod references is read with a GET. The
// object is the cache's own: callers must not change it.
func (s *Sources) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return get[*v1.ConfigMap](ctx, s, KindConfigMap, namespace, name)
}

// Secret is ConfigMap for Secrets.
func (s *Sources) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return get[*v1.Secret](ctx, s, KindSecret, namespace, name)
}

func get[T runtime.Object](ctx context.Context, s *Sources, kind, namespace, name string) (T, error) {
	var zero T
	read := func(ctx context.Context) (runtime.Object, error) { return s.objects.get(ctx, kind, namespace, name) }
	var obj runtime.Object
	var err error
	if s.cache != nil {
		obj, err = s.cache.get(ctx, objectKey{kind, namespace, name}, read)
	} else {
		obj, err = read(ctx)
	}
	if err != nil {
		return zero, err
	}
	typed, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s %s/%s: unexpected object %T", kind, namespace, name, obj)
	}
	return typed, nil
}

// PersistentVolumeClaim reads the claim with a GET: the Node authorizer
// allows it for the claims of the node's pods.
func (s *Sources) PersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return s.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

// PersistentVolume reads the volume with a GET: the Node authorizer allows
// it for the volumes bound to the claims of the node's pods.
func (s *Sources) PersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return s.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// PatchPersistentVolumeClaimStatus applies a strategic merge patch to the
// claim's status, as upstream's kubelet marks a node expansion: the Node
// authorizer allows it for the claims of the node's pods, and
// NodeRestriction lets a node change the status' capacity, conditions and
// allocated resources (and statuses) only.
func (s *Sources) PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.PersistentVolumeClaim, error) {
	return s.client.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

// ServiceAccountToken returns a token of the pod's service account for the
// projection's audience (none: the API server's own) and lifetime, bound to
// the pod, with its expiry, from the cache until it needs a refresh
// (upstream's rule: 80 % of its lifetime passed, or 24 h).
func (s *Sources) ServiceAccountToken(ctx context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (authenticationv1.TokenRequestStatus, error) {
	if pod.Spec.ServiceAccountName == "" {
		return authenticationv1.TokenRequestStatus{}, fmt.Errorf("pod %s/%s has no service account to request a token for", pod.Namespace, pod.Name)
	}
	tr, err := s.tokens.get(ctx, pod.Namespace, pod.Spec.ServiceAccountName, tokenRequest(pod, p))
	if err != nil {
		return authenticationv1.TokenRequestStatus{}, err
	}
	return tr.Status, nil
}

// ServiceAccount reads the service account with a GET, as upstream reads
// it for image credential provider plugins.
func (s *Sources) ServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	return s.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Token returns a token of the service account for the request, from the
// cache until it needs a refresh, as upstream's token manager gives image
// credential provider plugins theirs.
func (s *Sources) Token(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return s.tokens.get(ctx, namespace, name, tr)
}

// DeleteServiceAccountToken forgets the tokens bound to the pod.
// UnregisterPod calls it.
func (s *Sources) DeleteServiceAccountToken(podUID types.UID) {
	s.tokens.deletePod(podUID)
}

// ClusterTrustBundles returns the PEM bundle the projection selects, as
// upstream's ClusterTrustBundle manager: the certificates of the named
// bundle, or of every bundle of the signer that the label selector
// matches, each once. An optional projection that selects nothing gives
// an empty bundle.
func (s *Sources) ClusterTrustBundles(ctx context.Context, p *v1.ClusterTrustBundleProjection) ([]byte, error) {
	return s.bundles.get(ctx, p)
}

// PodCertificateCredentials returns the PEM key and certificate chain
// issued for the registered pod's podCertificate projection, as upstream's
// pod certificate manager: an error until the signer issued it, and for
// good once it denied or failed the request. A refreshed certificate is
// told through OnChange (KindPod).
func (s *Sources) PodCertificateCredentials(_ context.Context, pod *v1.Pod, volumeName string, sourceIndex int) ([]byte, []byte, error) {
	return s.certs.credentials(pod, volumeName, sourceIndex)
}

// CSIDriver reads the driver's object with a GET: the Node authorizer
// allows every node to read CSIDrivers.
func (s *Sources) CSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	return s.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
}

// VolumeAttachment reads the attachment with a GET: the Node authorizer
// allows it for the attachments to this node.
func (s *Sources) VolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return s.client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
}

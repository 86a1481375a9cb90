package apisource

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// maxLabelSelectorLength is upstream's bound on a projection's selector.
const maxLabelSelectorLength = 100 * 1024

// trustBundle is a ClusterTrustBundle of whichever version is served.
type trustBundle struct {
	name, signerName, trustBundle string
	labels                        labels.Set
}

func asTrustBundle(obj any) (trustBundle, bool) {
	switch b := obj.(type) {
	case *certificatesv1.ClusterTrustBundle:
		return trustBundle{b.Name, b.Spec.SignerName, b.Spec.TrustBundle, b.Labels}, true
	case *certificatesv1beta1.ClusterTrustBundle:
		return trustBundle{b.Name, b.Spec.SignerName, b.Spec.TrustBundle, b.Labels}, true
	case *certificatesv1alpha1.ClusterTrustBundle:
		return trustBundle{b.Name, b.Spec.SignerName, b.Spec.TrustBundle, b.Labels}, true
	}
	return trustBundle{}, false
}

// trustBundles reads ClusterTrustBundles through an informer on the newest
// version the API server serves, started at the first use, as upstream's
// LazyInformerManager (a node that never projects one never watches them).
type trustBundles struct {
	ctx    context.Context
	client kubernetes.Interface
	// seed orders a bundle's certificates: the same order for the same
	// certificates for the life of the process, another after a restart.
	seed uint64

	mu       sync.Mutex
	informer cache.SharedIndexInformer
}

func newTrustBundles(ctx context.Context, client kubernetes.Interface) *trustBundles {
	return &trustBundles{ctx: ctx, client: client, seed: rand.Uint64()}
}

// trustBundleVersions are tried newest first, as upstream.
var trustBundleVersions = []schema.GroupVersion{
	certificatesv1.SchemeGroupVersion,
	certificatesv1beta1.SchemeGroupVersion,
	certificatesv1alpha1.SchemeGroupVersion,
}

// start returns the informer, starting it on the first call that finds the
// API served; a call that finds it not served tries again next time.
func (t *trustBundles) start(ctx context.Context) (cache.SharedIndexInformer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.informer != nil {
		return t.informer, nil
	}
	disc := discovery.ToDiscoveryInterfaceWithContext(t.client.Discovery())
	factory := informers.NewSharedInformerFactory(t.client, 0)
	for _, gv := range trustBundleVersions {
		res, err := disc.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
		if apierrors.IsNotFound(err) {
			continue
		}
		served := res != nil && slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == "clustertrustbundles" })
		if !served {
			if err != nil {
				return nil, fmt.Errorf("finding the ClusterTrustBundle API: %w", err)
			}
			continue
		}
		switch gv {
		case certificatesv1.SchemeGroupVersion:
			t.informer = factory.Certificates().V1().ClusterTrustBundles().Informer()
		case certificatesv1beta1.SchemeGroupVersion:
			t.informer = factory.Certificates().V1beta1().ClusterTrustBundles().Informer()
		default:
			t.informer = factory.Certificates().V1alpha1().ClusterTrustBundles().Informer()
		}
		factory.Start(t.ctx.Done())
		return t.informer, nil
	}
	return nil, errors.New("the API server does not serve ClusterTrustBundles (certificates.k8s.io v1, v1beta1 or v1alpha1): its feature gate or API version is off")
}

func (t *trustBundles) get(ctx context.Context, p *v1.ClusterTrustBundleProjection) ([]byte, error) {
	if p.Name == nil && p.SignerName == nil {
		return nil, errors.New("ClusterTrustBundle projection requires either name or signerName to be set")
	}
	informer, err := t.start(ctx)
	if err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, errors.New("ClusterTrustBundle informer has not yet synced")
	}
	allowMissing := p.Optional != nil && *p.Optional
	if p.Name != nil {
		return t.byName(informer.GetStore(), *p.Name, allowMissing)
	}
	return t.bySigner(informer.GetStore(), *p.SignerName, p.LabelSelector, allowMissing)
}

func (t *trustBundles) byName(store cache.Store, name string, allowMissing bool) ([]byte, error) {
	obj, ok, err := store.GetByKey(name)
	if err != nil {
		return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
	}
	if !ok {
		if allowMissing {
			return []byte{}, nil
		}
		return nil, fmt.Errorf("while getting ClusterTrustBundle: %w",
			apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"), name))
	}
	b, _ := asTrustBundle(obj)
	return t.normalize([]trustBundle{b}), nil
}

func (t *trustBundles) bySigner(store cache.Store, signerName string, ls *metav1.LabelSelector, allowMissing bool) ([]byte, error) {
	// As upstream: a nil selector matches nothing, an empty one everything.
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("while parsing label selector: %w", err)
	}
	if n := len(selector.String()); n > maxLabelSelectorLength {
		return nil, fmt.Errorf("label selector length (%d) is larger than %d", n, maxLabelSelectorLength)
	}
	var matched []trustBundle
	for _, obj := range store.List() {
		if b, ok := asTrustBundle(obj); ok && b.signerName == signerName && selector.Matches(b.labels) {
			matched = append(matched, b)
		}
	}
	if len(matched) == 0 {
		if allowMissing {
			return []byte{}, nil
		}
		return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
	}
	return t.normalize(matched), nil
}

// normalize returns the bundles' certificates as PEM, each once. Upstream
// shuffles them so that no client comes to depend on an order, and caches
// the result for five minutes; here the order is a shuffle seeded by the
// process and the certificates, so that the same certificates give the same
// file (no rewrite of the volume on every refresh) until a restart.
func (t *trustBundles) normalize(bundles []trustBundle) []byte {
	seen := map[string]struct{}{}
	var certs []string
	for _, b := range bundles {
		rest := []byte(b.trustBundle)
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if _, dup := seen[string(block.Bytes)]; !dup {
				seen[string(block.Bytes)] = struct{}{}
				certs = append(certs, string(block.Bytes))
			}
		}
	}
	slices.Sort(certs)
	h := fnv.New64a()
	for _, c := range certs {
		h.Write([]byte(c))
	}
	r := rand.New(rand.NewPCG(t.seed, h.Sum64()))
	r.Shuffle(len(certs), func(i, j int) { certs[i], certs[j] = certs[j], certs[i] })
	out := []byte{}
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(c)})...)
	}
	return out
}

package apisource

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// As upstream's pod certificate manager (pkg/kubelet/podcertificate).
const (
	// pcrAssumeDeletedAfter: a request created this long ago (plus
	// jitter) and still not seen by the watch is assumed deleted, and
	// asked for again.
	pcrAssumeDeletedAfter = 10 * time.Minute
	// pcrMaxJitter spreads refreshes, so that projections issued together
	// do not all ask again together.
	pcrMaxJitter = 5 * time.Minute
	// pcrRefreshPeriod: how often every projection is looked at again (is
	// it time to refresh?).
	pcrRefreshPeriod = time.Minute
	// pcrWorkers process projections in parallel: generating an RSA key
	// takes a while.
	pcrWorkers = 2
)

// projectionKey names one podCertificate projection: the source at index
// of the pod's projected volume.
type projectionKey struct {
	podUID types.UID
	volume string
	index  int
}

// credPhase is where a projection is in upstream's state machine:
//
//	initial → wait → fresh ⇄ waitRefresh
//	wait, waitRefresh → denied or failed (for good)
type credPhase int

const (
	credInitial credPhase = iota
	credWait
	credFresh
	credWaitRefresh
	credDenied
	credFailed
)

// credential is one projection's state. It is a value: its methods return
// the next state and do no I/O, so that the state machine is tested alone.
type credential struct {
	phase credPhase
	// key and chain were issued (fresh, waitRefresh); from
	// beginRefreshAt (with jitter) a new pair is asked for.
	key, chain               []byte
	beginRefreshAt, notAfter time.Time
	// pendingKey is the key of the request pendingPCR waited for (wait,
	// waitRefresh); not seen by abandonAt, the request is assumed deleted.
	pendingKey []byte
	pendingPCR string
	abandonAt  time.Time
	// reason and message say why the request was denied or failed.
	reason, message string
}

// bundle returns the issued key and chain, or why there are none.
func (c *credential) bundle() (key, chain []byte, err error) {
	switch c.phase {
	case credFresh, credWaitRefresh:
		return c.key, c.chain, nil
	case credDenied:
		return nil, nil, fmt.Errorf("PodCertificateRequest was permanently denied: reason=%q message=%q", c.reason, c.message)
	case credFailed:
		return nil, nil, fmt.Errorf("PodCertificateRequest was permanently failed: reason=%q message=%q", c.reason, c.message)
	}
	return nil, nil, errors.New("credential bundle is not issued yet")
}

// needsRequest reports whether a PodCertificateRequest is to be created:
// none yet, or the issued certificate is due for refresh.
func (c *credential) needsRequest(now time.Time) bool {
	return c.phase == credInitial || c.phase == credFresh && !now.Before(c.beginRefreshAt)
}

// requested is the state once the request named name was created at now
// for the PEM key.
func (c credential) requested(key []byte, name string, now time.Time, jitter time.Duration) credential {
	c.pendingKey, c.pendingPCR = key, name
	c.abandonAt = now.Add(pcrAssumeDeletedAfter + jitter)
	if c.phase == credInitial {
		c.phase = credWait
	} else {
		c.phase = credWaitRefresh
	}
	return c
}

// observed is the state once the pending request was looked up: pcr is nil
// when the watch has not seen it. changed reports that what the volume
// shows changed (issued, denied, failed). The error asks for another look
// later: the request not seen yet, or assumed deleted (then the next look
// asks for a new one).
func (c credential) observed(pcr *certificatesv1.PodCertificateRequest, now time.Time, jitter time.Duration) (next credential, changed bool, err error) {
	if pcr == nil {
		if !now.After(c.abandonAt) {
			return c, false, fmt.Errorf("PodCertificateRequest %q not seen yet", c.pendingPCR)
		}
		name := c.pendingPCR
		c.pendingKey, c.pendingPCR, c.abandonAt = nil, "", time.Time{}
		if c.phase == credWait {
			c.phase = credInitial
		} else {
			c.phase = credFresh
		}
		return c, false, fmt.Errorf("PodCertificateRequest %q appears to have been deleted", name)
	}
	for _, cond := range pcr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied:
			return credential{phase: credDenied, reason: cond.Reason, message: cond.Message}, true, nil
		case certificatesv1.PodCertificateRequestConditionTypeFailed:
			return credential{phase: credFailed, reason: cond.Reason, message: cond.Message}, true, nil
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			var begin, notAfter time.Time
			if t := pcr.Status.BeginRefreshAt; t != nil {
				begin = t.Add(jitter)
			}
			if t := pcr.Status.NotAfter; t != nil {
				notAfter = t.Time
			}
			return credential{
				phase: credFresh, key: c.pendingKey, chain: cleanCertificateChain([]byte(pcr.Status.CertificateChain)),
				beginRefreshAt: begin, notAfter: notAfter,
			}, true, nil
		}
	}
	return c, false, nil
}

// podCertificates issues the credentials of podCertificate projections, as
// upstream's IssuingManager: for each projection of each tracked pod it
// generates a key, creates a PodCertificateRequest and waits, through a
// watch of the node's requests, for the signer to issue, deny or fail it;
// an issued certificate is asked for again from its beginRefreshAt. State
// is not kept across restarts: every projection is asked for anew.
type podCertificates struct {
	ctx      context.Context
	client   kubernetes.Interface
	clock    clock.WithTicker
	onChange func(kind, namespace, name string)
	log      zerolog.Logger
	jitter   func() time.Duration

	queue workqueue.TypedRateLimitingInterface[projectionKey]

	mu    sync.Mutex
	pods  map[types.UID]*v1.Pod
	creds map[projectionKey]*credential
	// requests is the watch of the node's PodCertificateRequests, started
	// with the first pod that has a projection.
	requests cache.SharedIndexInformer
}

func newPodCertificates(ctx context.Context, client kubernetes.Interface, clk clock.WithTicker, onChange func(kind, namespace, name string), log zerolog.Logger) *podCertificates {
	m := &podCertificates{
		ctx: ctx, client: client, clock: clk, onChange: onChange, log: log,
		jitter: func() time.Duration { return time.Duration(mathrand.Int64N(int64(pcrMaxJitter))) },
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[projectionKey]()),
		pods:   map[types.UID]*v1.Pod{},
		creds:  map[projectionKey]*credential{},
	}
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
	}()
	return m
}

// projections returns the keys of the pod's podCertificate projections.
func projections(pod *v1.Pod) []projectionKey {
	var keys []projectionKey
	for _, vol := range pod.Spec.Volumes {
		if vol.Projected == nil {
			continue
		}
		for i, src := range vol.Projected.Sources {
			if src.PodCertificate != nil {
				keys = append(keys, projectionKey{podUID: pod.UID, volume: vol.Name, index: i})
			}
		}
	}
	return keys
}

// track follows the pod (again, after an update) and queues its
// projections. A pod without any is not followed.
func (m *podCertificates) track(pod *v1.Pod) {
	keys := projections(pod)
	if len(keys) == 0 {
		m.forget(pod.UID)
		return
	}
	m.mu.Lock()
	m.pods[pod.UID] = pod
	if m.requests == nil {
		m.start(pod.Spec.NodeName)
	}
	m.mu.Unlock()
	for _, k := range keys {
		m.queue.Add(k)
	}
}

// forget drops the pod and its credentials.
func (m *podCertificates) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
	for k := range m.creds {
		if k.podUID == uid {
			delete(m.creds, k)
		}
	}
}

// queuePod queues the tracked pod's projections.
func (m *podCertificates) queuePod(uid types.UID) {
	m.mu.Lock()
	pod := m.pods[uid]
	m.mu.Unlock()
	if pod == nil {
		return
	}
	for _, k := range projections(pod) {
		m.queue.Add(k)
	}
}

// start starts the watch of the node's requests, named by the pods' own
// spec.nodeName (the Node authorizer lets a node list and watch only
// those), then the workers once it has listed, and the periodic refresh
// pass. Called with mu held.
func (m *podCertificates) start(nodeName string) {
	factory := informers.NewSharedInformerFactoryWithOptions(m.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	}))
	m.requests = factory.Certificates().V1().PodCertificateRequests().Informer()
	requeue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pcr, ok := obj.(*certificatesv1.PodCertificateRequest); ok {
			m.queuePod(pcr.Spec.PodUID)
		}
	}
	_, _ = m.requests.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    requeue,
		UpdateFunc: func(_, obj any) { requeue(obj) },
		DeleteFunc: requeue,
	})
	factory.Start(m.ctx.Done())
	informer := m.requests
	go func() {
		if !cache.WaitForCacheSync(m.ctx.Done(), informer.HasSynced) {
			return
		}
		for range pcrWorkers {
			go func() {
				for m.processNext() {
				}
			}()
		}
		m.refreshEvery(pcrRefreshPeriod)
	}()
}

// refreshEvery queues every projection each period, until the context is
// done: those due for refresh ask for a new certificate.
func (m *podCertificates) refreshEvery(period time.Duration) {
	t := m.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C():
		}
		m.mu.Lock()
		var keys []projectionKey
		for _, pod := range m.pods {
			keys = append(keys, projections(pod)...)
		}
		m.mu.Unlock()
		for _, k := range keys {
			m.queue.Add(k)
		}
	}
}

func (m *podCertificates) processNext() bool {
	key, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(key)
	if err := m.handle(m.ctx, key); err != nil {
		m.log.Debug().Err(err).Str("podUID", string(key.podUID)).Str("volume", key.volume).Int("sourceIndex", key.index).
			Msg("podCertificate projection: retrying")
		m.queue.AddRateLimited(key)
		return true
	}
	m.queue.Forget(key)
	return true
}

// handle moves the projection one step: it creates a request when one is
// needed, else looks at the one pending. The workqueue never hands the same
// key to two workers at once, so a projection's state is only changed here.
func (m *podCertificates) handle(ctx context.Context, key projectionKey) error {
	m.mu.Lock()
	pod := m.pods[key.podUID]
	var cur credential
	if c := m.creds[key]; c != nil {
		cur = *c
	}
	m.mu.Unlock()
	if pod == nil {
		return nil
	}
	source := podCertificateSource(pod, key)
	if source == nil {
		return nil
	}
	now := m.clock.Now()
	var next credential
	var changed bool
	var err error
	switch {
	case cur.needsRequest(now):
		var keyPEM []byte
		var pcr *certificatesv1.PodCertificateRequest
		keyPEM, pcr, err = m.request(ctx, pod, source)
		if err != nil {
			if cur.phase == credInitial {
				return fmt.Errorf("while creating initial PodCertificateRequest: %w", err)
			}
			return fmt.Errorf("while creating refresh PodCertificateRequest: %w", err)
		}
		next = cur.requested(keyPEM, pcr.Name, now, m.jitter())
	case cur.phase == credWait || cur.phase == credWaitRefresh:
		next, changed, err = cur.observed(m.lookup(pod.Namespace, cur.pendingPCR), now, m.jitter())
		if changed && (next.phase == credDenied || next.phase == credFailed) {
			m.log.Warn().Str("pod", pod.Namespace+"/"+pod.Name).Str("pcr", cur.pendingPCR).
				Str("reason", next.reason).Str("message", next.message).Msg("PodCertificateRequest denied or failed")
		}
	default:
		return nil
	}
	m.mu.Lock()
	if m.pods[key.podUID] == nil {
		// Forgotten meanwhile.
		m.mu.Unlock()
		return nil
	}
	m.creds[key] = &next
	m.mu.Unlock()
	if changed && m.onChange != nil {
		m.onChange(KindPod, pod.Namespace, pod.Name)
	}
	return err
}

// podCertificateSource returns the projection key names in pod, nil if
// the pod no longer has it.
func podCertificateSource(pod *v1.Pod, key projectionKey) *v1.PodCertificateProjection {
	for _, vol := range pod.Spec.Volumes {
		if vol.Name == key.volume && vol.Projected != nil && key.index < len(vol.Projected.Sources) {
			return vol.Projected.Sources[key.index].PodCertificate
		}
	}
	return nil
}

// lookup returns the request from the watch's cache, nil when not there.
func (m *podCertificates) lookup(namespace, name string) *certificatesv1.PodCertificateRequest {
	obj, ok, err := m.requests.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	pcr, _ := obj.(*certificatesv1.PodCertificateRequest)
	return pcr
}

// request generates a key of the projection's type and asks for its
// certificate, as upstream: the pod, its service account and the node by
// name and UID, a stub PKCS#10 request signed with the key as proof of
// possession, the projection's maximum lifetime and user annotations. It
// returns the key, PEM-encoded PKCS#8, and the created request.
func (m *podCertificates) request(ctx context.Context, pod *v1.Pod, src *v1.PodCertificateProjection) ([]byte, *certificatesv1.PodCertificateRequest, error) {
	sa, err := m.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, pod.Spec.ServiceAccountName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while fetching service account: %w", err)
	}
	node, err := m.client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while getting node object: %w", err)
	}
	key, stub, err := generateKeyAndProof(src.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating keypair: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("while marshaling key to PKCS#8: %w", err)
	}
	req := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.Namespace,
			GenerateName: "req-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        pod.Spec.ServiceAccountName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  types.NodeName(pod.Spec.NodeName),
			NodeUID:                   node.UID,
			MaxExpirationSeconds:      src.MaxExpirationSeconds,
			StubPKCS10Request:         stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	created, err := m.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while creating on API: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), created, nil
}

// credentials returns the projection's issued key and chain.
func (m *podCertificates) credentials(pod *v1.Pod, volumeName string, sourceIndex int) ([]byte, []byte, error) {
	key := projectionKey{podUID: pod.UID, volume: volumeName, index: sourceIndex}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.creds[key]
	if c == nil {
		return nil, nil, fmt.Errorf("no credentials yet for pod %s/%s volume %q source %d", pod.Namespace, pod.Name, volumeName, sourceIndex)
	}
	return c.bundle()
}

// generateKeyAndProof returns a new key of keyType and a stub PKCS#10
// request it signed, which proves to the API server that the requester
// holds the key.
func generateKeyAndProof(keyType string) (crypto.Signer, []byte, error) {
	var key crypto.Signer
	var err error
	switch keyType {
	case "RSA3072":
		key, err = rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		key, err = rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("unknown key type %q", keyType)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("while generating %s key: %w", keyType, err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	return key, stub, nil
}

// cleanCertificateChain keeps only the PEM blocks' bytes, as CERTIFICATE
// blocks without headers or text between them, as upstream.
func cleanCertificateChain(in []byte) []byte {
	var out bytes.Buffer
	for rest := in; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out.Bytes()
		}
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})
	}
}

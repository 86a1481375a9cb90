package apisource

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func pcrWith(conds ...metav1.Condition) *certificatesv1.PodCertificateRequest {
	return &certificatesv1.PodCertificateRequest{Status: certificatesv1.PodCertificateRequestStatus{Conditions: conds}}
}

func issuedPCR(chain string, beginRefresh, notAfter time.Time) *certificatesv1.PodCertificateRequest {
	p := pcrWith(metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue})
	p.Status.CertificateChain = chain
	p.Status.BeginRefreshAt = ptr.To(metav1.NewTime(beginRefresh))
	p.Status.NotAfter = ptr.To(metav1.NewTime(notAfter))
	return p
}

func TestCredentialObserved(t *testing.T) {
	const jitter = time.Minute
	pemChain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("leaf")}))
	wait := credential{phase: credWait, pendingKey: []byte("k1"), pendingPCR: "req-1", abandonAt: epoch.Add(10 * time.Minute)}
	fresh := credential{phase: credFresh, key: []byte("k0"), chain: []byte("c0"), beginRefreshAt: epoch, notAfter: epoch.Add(time.Hour)}
	waitRefresh := fresh.requested([]byte("k1"), "req-1", epoch, 0)
	for _, tc := range []struct {
		name        string
		cur         credential
		pcr         *certificatesv1.PodCertificateRequest
		now         time.Time
		wantPhase   credPhase
		wantChanged bool
		wantErr     string
		// wantKey is the key bundle() returns, "" for an error.
		wantKey, wantBundleErr string
	}{
		{"pending: nothing changes", wait, pcrWith(), epoch, credWait, false, "", "", "not issued yet"},
		{"not seen yet: look again", wait, nil, epoch.Add(10 * time.Minute), credWait, false, `"req-1" not seen yet`, "", "not issued yet"},
		{"not seen past abandonAt: ask again", wait, nil, epoch.Add(10*time.Minute + time.Second), credInitial, false, "appears to have been deleted", "", "not issued yet"},
		{"issued", wait, issuedPCR(pemChain, epoch.Add(time.Hour), epoch.Add(2*time.Hour)), epoch, credFresh, true, "", "k1", ""},
		{"denied", wait, pcrWith(metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Reason: "Nope", Message: "no"}), epoch, credDenied, true, "", "", `permanently denied: reason="Nope" message="no"`},
		{"failed", wait, pcrWith(metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeFailed, Reason: "Bad", Message: "b"}), epoch, credFailed, true, "", "", `permanently failed: reason="Bad" message="b"`},
		{"refresh pending keeps the old credentials", waitRefresh, pcrWith(), epoch, credWaitRefresh, false, "", "k0", ""},
		{"refresh not seen past abandonAt: fresh again", waitRefresh, nil, epoch.Add(time.Hour), credFresh, false, "appears to have been deleted", "k0", ""},
		{"refresh issued: the new key", waitRefresh, issuedPCR(pemChain, epoch.Add(time.Hour), epoch.Add(2*time.Hour)), epoch, credFresh, true, "", "k1", ""},
		{"refresh denied drops the old credentials, as upstream", waitRefresh, pcrWith(metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeDenied}), epoch, credDenied, true, "", "", "permanently denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, changed, err := tc.cur.observed(tc.pcr, tc.now, jitter)
			if next.phase != tc.wantPhase || changed != tc.wantChanged {
				t.Errorf("phase %v changed %v, want %v %v", next.phase, changed, tc.wantPhase, tc.wantChanged)
			}
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			key, _, err := next.bundle()
			if string(key) != tc.wantKey || (err == nil) != (tc.wantBundleErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantBundleErr) {
				t.Errorf("bundle key %q error %v, want %q %q", key, err, tc.wantKey, tc.wantBundleErr)
			}
			if next.phase == credFresh && changed {
				if string(next.chain) != pemChain {
					t.Errorf("chain %q", next.chain)
				}
				if !next.beginRefreshAt.Equal(epoch.Add(time.Hour+jitter)) || !next.notAfter.Equal(epoch.Add(2*time.Hour)) {
					t.Errorf("beginRefreshAt %v notAfter %v, want beginRefreshAt plus jitter and notAfter", next.beginRefreshAt, next.notAfter)
				}
			}
		})
	}
}

func TestCredentialNeedsRequest(t *testing.T) {
	fresh := credential{phase: credFresh, beginRefreshAt: epoch}
	for _, tc := range []struct {
		name string
		cur  credential
		now  time.Time
		want bool
	}{
		{"initial", credential{}, epoch, true},
		{"waiting", credential{phase: credWait}, epoch, false},
		{"fresh before beginRefreshAt", fresh, epoch.Add(-time.Second), false},
		{"fresh at beginRefreshAt", fresh, epoch, true},
		{"refresh pending", fresh.requested(nil, "r", epoch, 0), epoch.Add(time.Hour), false},
		{"denied", credential{phase: credDenied}, epoch, false},
		{"failed", credential{phase: credFailed}, epoch, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cur.needsRequest(tc.now); got != tc.want {
				t.Errorf("needsRequest = %v, want %v", got, tc.want)
			}
		})
	}
	if got := (credential{}).requested(nil, "r", epoch, time.Minute); got.phase != credWait || !got.abandonAt.Equal(epoch.Add(11*time.Minute)) {
		t.Errorf("requested: phase %v abandonAt %v", got.phase, got.abandonAt)
	}
}

// TestGenerateKeyAndProof checks each key type: the stub request is signed
// by the key (the API server's proof of possession) and carries its public
// key.
func TestGenerateKeyAndProof(t *testing.T) {
	for _, keyType := range []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"} {
		t.Run(keyType, func(t *testing.T) {
			key, stub, err := generateKeyAndProof(keyType)
			if err != nil {
				t.Fatal(err)
			}
			csr, err := x509.ParseCertificateRequest(stub)
			if err != nil {
				t.Fatal(err)
			}
			if err := csr.CheckSignature(); err != nil {
				t.Errorf("proof of possession: %v", err)
			}
			if pub, ok := csr.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(key.Public()) {
				t.Errorf("the stub request's public key is not the key's")
			}
		})
	}
	if _, _, err := generateKeyAndProof("DSA"); err == nil || !strings.Contains(err.Error(), `unknown key type "DSA"`) {
		t.Errorf("error %v for an unknown key type", err)
	}
}

func TestCleanCertificateChain(t *testing.T) {
	in := "junk\n" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"h": "v"}, Bytes: []byte("a")})) +
		"between\n" + string(pem.EncodeToMemory(&pem.Block{Type: "X", Bytes: []byte("b")}))
	want := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("a")})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("b")}))
	if got := string(cleanCertificateChain([]byte(in))); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// certsHarness runs the pod certificates against a fake API server that
// names created requests and knows the pod's service account and node.
type certsHarness struct {
	client  *fake.Clientset
	clock   *testclock.FakeClock
	m       *podCertificates
	changed chan string
}

func newCertsHarness(t *testing.T) *certsHarness {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := fake.NewClientset(
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}},
	)
	var n atomic.Int32
	client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		obj.Name = fmt.Sprintf("%s%d", obj.GenerateName, n.Add(1))
		return false, nil, nil
	})
	h := &certsHarness{client: client, clock: testclock.NewFakeClock(epoch), changed: make(chan string, 10)}
	h.m = newPodCertificates(ctx, client, h.clock, func(kind, ns, name string) {
		h.changed <- kind + " " + ns + "/" + name
	}, zerolog.Nop())
	h.m.jitter = func() time.Duration { return 0 }
	return h
}

// created waits for the n-th request.
func (h *certsHarness) created(t *testing.T, n int) *certificatesv1.PodCertificateRequest {
	t.Helper()
	name := fmt.Sprintf("req-%d", n)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pcr, err := h.client.CertificatesV1().PodCertificateRequests("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			return pcr
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not created", name)
	return nil
}

func (h *certsHarness) setStatus(t *testing.T, pcr *certificatesv1.PodCertificateRequest, cond metav1.Condition, chain string, notAfter time.Time) {
	t.Helper()
	pcr = pcr.DeepCopy()
	pcr.Status.Conditions = []metav1.Condition{cond}
	if chain != "" {
		pcr.Status.CertificateChain = chain
		pcr.Status.NotBefore = ptr.To(metav1.NewTime(h.clock.Now()))
		pcr.Status.BeginRefreshAt = ptr.To(metav1.NewTime(notAfter.Add(-time.Hour)))
		pcr.Status.NotAfter = ptr.To(metav1.NewTime(notAfter))
	}
	if _, err := h.client.CertificatesV1().PodCertificateRequests("ns").UpdateStatus(context.Background(), pcr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (h *certsHarness) wantChange(t *testing.T) {
	t.Helper()
	select {
	case got := <-h.changed:
		if got != "Pod ns/p" {
			t.Errorf("OnChange(%s), want Pod ns/p", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnChange not called")
	}
}

func certPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"},
		Spec: v1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa", Volumes: []v1.Volume{
			{Name: "other", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "certs", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				{PodCertificate: &v1.PodCertificateProjection{
					SignerName: "example.com/signer", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr.To[int32](3600),
					UserAnnotations: map[string]string{"spiffe/path-overriding": "/w"}, CredentialBundlePath: "b.pem",
				}},
			}}}},
		}},
	}
}

func chainPEM(s string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(s)}))
}

// TestPodCertificatesIssueAndRefresh follows a projection from its first
// request to the issued credentials, then through a refresh.
func TestPodCertificatesIssueAndRefresh(t *testing.T) {
	h := newCertsHarness(t)
	pod := certPod()
	h.m.track(pod)
	if _, _, err := h.m.credentials(pod, "certs", 1); err == nil {
		t.Fatal("credentials before any were issued")
	}

	pcr := h.created(t, 1)
	want := certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/signer", PodName: "p", PodUID: "pod-uid", ServiceAccountName: "sa", ServiceAccountUID: "sa-uid",
		NodeName: "node-1", NodeUID: "node-uid", MaxExpirationSeconds: ptr.To[int32](3600),
		UnverifiedUserAnnotations: map[string]string{"spiffe/path-overriding": "/w"},
		StubPKCS10Request:         pcr.Spec.StubPKCS10Request,
	}
	if !equality.Semantic.DeepEqual(pcr.Spec, want) {
		t.Errorf("spec\n%+v, want\n%+v", pcr.Spec, want)
	}
	if pcr.GenerateName != "req-" || len(pcr.OwnerReferences) != 1 || pcr.OwnerReferences[0].UID != "pod-uid" || pcr.OwnerReferences[0].Kind != "Pod" {
		t.Errorf("metadata %+v", pcr.ObjectMeta)
	}
	// The request shows in the API before the manager records it as
	// pending: wait for that.
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, _, err = h.m.credentials(pod, "certs", 1); err != nil && strings.Contains(err.Error(), "not issued yet") {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "not issued yet") {
		t.Errorf("error %v while pending", err)
	}

	h.setStatus(t, pcr, metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue},
		chainPEM("first"), epoch.Add(2*time.Hour))
	h.wantChange(t)
	key, chain, err := h.m.credentials(pod, "certs", 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(chain) != chainPEM("first") {
		t.Errorf("chain %q", chain)
	}
	checkKeyMatches(t, key, pcr.Spec.StubPKCS10Request)

	// Before beginRefreshAt a refresh pass asks for nothing.
	h.clock.Step(time.Hour - time.Second)
	h.m.queuePod(pod.UID)
	time.Sleep(50 * time.Millisecond)
	if _, err := h.client.CertificatesV1().PodCertificateRequests("ns").Get(context.Background(), "req-2", metav1.GetOptions{}); err == nil {
		t.Fatal("refreshed before beginRefreshAt")
	}
	// From it, a new request; the old credentials meanwhile.
	h.clock.Step(time.Second)
	h.m.queuePod(pod.UID)
	pcr2 := h.created(t, 2)
	if k, _, _ := h.m.credentials(pod, "certs", 1); !bytes.Equal(k, key) {
		t.Error("credentials changed before the refresh was issued")
	}
	h.setStatus(t, pcr2, metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue},
		chainPEM("second"), epoch.Add(4*time.Hour))
	h.wantChange(t)
	key2, chain2, err := h.m.credentials(pod, "certs", 1)
	if err != nil || string(chain2) != chainPEM("second") || bytes.Equal(key2, key) {
		t.Fatalf("after refresh: chain %q, same key %v, error %v", chain2, bytes.Equal(key2, key), err)
	}
	checkKeyMatches(t, key2, pcr2.Spec.StubPKCS10Request)

	h.m.forget(pod.UID)
	if _, _, err := h.m.credentials(pod, "certs", 1); err == nil || !strings.Contains(err.Error(), "no credentials yet") {
		t.Errorf("error %v after forget", err)
	}
}

func TestPodCertificatesDenied(t *testing.T) {
	h := newCertsHarness(t)
	pod := certPod()
	h.m.track(pod)
	pcr := h.created(t, 1)
	h.setStatus(t, pcr, metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
		Reason: "Policy", Message: "not this pod"}, "", time.Time{})
	h.wantChange(t)
	_, _, err := h.m.credentials(pod, "certs", 1)
	if err == nil || !strings.Contains(err.Error(), `permanently denied: reason="Policy" message="not this pod"`) {
		t.Errorf("error %v", err)
	}
}

func TestPodCertificatesTrackWithoutProjection(t *testing.T) {
	h := newCertsHarness(t)
	pod := certPod()
	pod.Spec.Volumes = pod.Spec.Volumes[:1]
	h.m.track(pod)
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if len(h.m.pods) != 0 || h.m.requests != nil {
		t.Error("a pod without a podCertificate projection is tracked, or starts the watch")
	}
}

// checkKeyMatches checks that the PEM key is the one that signed the stub
// request.
func checkKeyMatches(t *testing.T, keyPEM, stub []byte) {
	t.Helper()
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key is not a PEM PRIVATE KEY")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(stub)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.(crypto.Signer).Public()
	if !csr.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(pub) {
		t.Error("the key is not the one the request was made for")
	}
}

// TestPodCertificatesRefreshPass checks that every period each tracked
// projection is queued again, so that one due for refresh asks anew.
func TestPodCertificatesRefreshPass(t *testing.T) {
	h := newCertsHarness(t)
	pod := certPod()
	h.m.mu.Lock()
	h.m.pods[pod.UID] = pod
	h.m.mu.Unlock()
	go h.m.refreshEvery(pcrRefreshPeriod)
	for !h.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	h.clock.Step(pcrRefreshPeriod)
	deadline := time.Now().Add(10 * time.Second)
	for h.m.queue.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	key, _ := h.m.queue.Get()
	if want := (projectionKey{podUID: pod.UID, volume: "certs", index: 1}); key != want {
		t.Errorf("queued %+v, want %+v", key, want)
	}
}

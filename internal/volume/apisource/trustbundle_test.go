package apisource

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/actorlet/actorlet/internal/testutil"
)

// selfSigned returns a new self-signed certificate as PEM.
func selfSigned(t testing.TB, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func servingTrustBundles(c *fake.Clientset, gv string) {
	c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "clustertrustbundles"}}},
	}
}

// certsOf returns the certificates of a PEM bundle, in order.
func certsOf(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		out = append(out, string(pem.EncodeToMemory(block)))
	}
	if len(bytes.TrimSpace(b)) != 0 {
		t.Fatalf("trailing bytes after the PEM blocks: %q", b)
	}
	return out
}

func TestClusterTrustBundles(t *testing.T) {
	ca1, ca2, ca3 := selfSigned(t, "ca1"), selfSigned(t, "ca2"), selfSigned(t, "ca3")
	bundle := func(name, signer string, labels map[string]string, pems ...string) runtime.Object {
		return &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(pems, "\n")},
		}
	}
	c := fake.NewClientset(
		bundle("plain", "", nil, ca1, ca1, ca2),
		bundle("example.com:signer:a", "example.com/signer", map[string]string{"team": "a"}, ca1, ca2),
		bundle("example.com:signer:b", "example.com/signer", map[string]string{"team": "b"}, ca2, ca3),
		bundle("other.com:signer:a", "other.com/signer", map[string]string{"team": "a"}, ca3),
	)
	servingTrustBundles(c, "certificates.k8s.io/v1")
	s := New(t.Context(), c, Options{})
	everything := &metav1.LabelSelector{}
	for _, tc := range []struct {
		name    string
		p       v1.ClusterTrustBundleProjection
		want    []string
		wantErr string
	}{
		{name: "by name, duplicates once", p: v1.ClusterTrustBundleProjection{Name: ptr.To("plain")}, want: []string{ca1, ca2}},
		{name: "missing name", p: v1.ClusterTrustBundleProjection{Name: ptr.To("nope")}, wantErr: "not found"},
		{name: "missing name, optional", p: v1.ClusterTrustBundleProjection{Name: ptr.To("nope"), Optional: ptr.To(true)}, want: nil},
		{name: "signer, every label", p: v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), LabelSelector: everything}, want: []string{ca1, ca2, ca3}},
		{name: "signer and label", p: v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}, want: []string{ca2, ca3}},
		{name: "signer, nil selector matches nothing", p: v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer")}, wantErr: "matched zero ClusterTrustBundles"},
		{name: "signer, nothing matched, optional", p: v1.ClusterTrustBundleProjection{SignerName: ptr.To("none.com/signer"), LabelSelector: everything, Optional: ptr.To(true)}, want: nil},
		{name: "neither name nor signer", p: v1.ClusterTrustBundleProjection{Path: "x"}, wantErr: "requires either name or signerName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ClusterTrustBundles(t.Context(), &tc.p)
			if testutil.WantErr(t, err, tc.wantErr) {
				return
			}
			if got == nil {
				t.Error("nil bundle, want empty bytes at least")
			}
			certs := certsOf(t, got)
			if len(certs) != len(tc.want) {
				t.Fatalf("%d certificates, want %d", len(certs), len(tc.want))
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("certificate missing from the bundle")
				}
			}
			again, _ := s.ClusterTrustBundles(t.Context(), &tc.p)
			if !bytes.Equal(got, again) {
				t.Error("the same certificates in another order on the next call")
			}
		})
	}
	if _, err := s.ClusterTrustBundles(t.Context(), &v1.ClusterTrustBundleProjection{Name: ptr.To("nope")}); !apierrors.IsNotFound(err) {
		t.Errorf("a missing bundle's error: %v, want NotFound", err)
	}
}

func TestClusterTrustBundlesBeta(t *testing.T) {
	ca := selfSigned(t, "ca")
	c := fake.NewClientset(&certificatesv1beta1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: certificatesv1beta1.ClusterTrustBundleSpec{TrustBundle: ca},
	})
	servingTrustBundles(c, "certificates.k8s.io/v1beta1")
	got, err := New(t.Context(), c, Options{}).ClusterTrustBundles(t.Context(), &v1.ClusterTrustBundleProjection{Name: ptr.To("b")})
	if err != nil || string(got) != ca {
		t.Fatalf("v1beta1 bundle: %q, %v", got, err)
	}
}

func TestClusterTrustBundlesNotServed(t *testing.T) {
	s := New(t.Context(), fake.NewClientset(), Options{})
	_, err := s.ClusterTrustBundles(t.Context(), &v1.ClusterTrustBundleProjection{Name: ptr.To("b")})
	if err == nil || !strings.Contains(err.Error(), "does not serve ClusterTrustBundles") {
		t.Fatalf("err = %v, want the API not served", err)
	}
}

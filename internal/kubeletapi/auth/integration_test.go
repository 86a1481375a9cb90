package auth

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// TestAgainstAPIServer runs the filter in webhook mode against the
// environment's kube-apiserver, with the node's own credentials for the
// reviews, as actorlet runs it.
func TestAgainstAPIServer(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	admin := e.AdminClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ns, err := admin.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "auth-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	sa, err := admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service account: %v", err)
	}
	expiry := int64(600)
	tr, err := admin.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request token for %s/%s: %v", ns.Name, sa.Name, err)
	}
	saUser := fmt.Sprintf("system:serviceaccount:%s:%s", ns.Name, sa.Name)
	bearer := "Bearer " + tr.Status.Token

	f, err := New(Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			X509: kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: e.CAFile},
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: new(true),
				CacheTTL: metav1.Duration{Duration: 2 * time.Minute}},
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: new(false)},
		},
		Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook,
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthorization{
				CacheAuthorizedTTL: metav1.Duration{Duration: 5 * time.Minute},
				// Short, so that the grant below is seen soon.
				CacheUnauthorizedTTL: metav1.Duration{Duration: time.Second}}},
		Client:   e.NodeClient(t),
		NodeName: e.NodeName,
		Log:      zerolog.New(zerolog.NewTestWriter(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f)

	kubeletClient, err := tls.LoadX509KeyPair(filepath.Join(e.StateDir, "pki", "apiserver-kubelet-client.crt"),
		filepath.Join(e.StateDir, "pki", "apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatalf("load the kube-apiserver's kubelet client certificate: %v", err)
	}
	adminTLS := e.AdminRESTConfig(t).TLSClientConfig
	var adminCert tls.Certificate
	if adminTLS.CertData != nil {
		adminCert, err = tls.X509KeyPair(adminTLS.CertData, adminTLS.KeyData)
	} else {
		adminCert, err = tls.LoadX509KeyPair(adminTLS.CertFile, adminTLS.KeyFile)
	}
	if err != nil {
		t.Fatalf("admin kubeconfig %s: client certificate: %v", e.AdminKubeconfig, err)
	}
	expect := func(what, path string, cert *tls.Certificate, wantStatus int, wantBody string, header ...string) {
		t.Helper()
		status, body := srv.do(t, http.MethodGet, path, cert, header...)
		if status != wantStatus || !strings.HasPrefix(body, wantBody) {
			t.Errorf("%s: GET %s: %d %q, want %d %q", what, path, status, body, wantStatus, wantBody)
		}
	}
	forbidden := func(subresources string) string {
		return fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[%s])\n", saUser, subresources)
	}

	expect("no credentials", "/pods", nil, 401, "Unauthorized")
	expect("garbage token", "/pods", nil, 401, "Unauthorized", "Authorization", "Bearer not-a-token")
	expect("service account without RBAC", "/pods", nil, 403, forbidden("pods proxy"), "Authorization", bearer)
	expect("kube-apiserver's kubelet client certificate", "/pods", &kubeletClient, 200,
		"user=kube-apiserver-kubelet-client groups=[system:authenticated]")
	expect("admin certificate (system:masters)", "/configz", &adminCert, 200, "user=")

	role, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "auth-test-pods-"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/pods"},
			ResourceNames: []string{e.NodeName}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cluster role: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	binding, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: sa.Name}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cluster role binding: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	// RBAC sees the binding through an informer, and the filter's refusal
	// is cached for a second: poll.
	agent.Eventually(t, "service account allowed nodes/pods", 30*time.Second, func() error {
		status, body := srv.do(t, http.MethodGet, "/pods", nil, "Authorization", bearer)
		if status != 200 {
			return fmt.Errorf("GET /pods: %d %q", status, body)
		}
		if want := "user=" + saUser + " "; !strings.HasPrefix(body, want) {
			return fmt.Errorf("GET /pods: body %q, want it to start with %q", body, want)
		}
		return nil
	})
	expect("service account allowed pods only", "/stats/summary", nil, 403, forbidden("stats"), "Authorization", bearer)
	expect("service account allowed pods only", "/healthz", nil, 403, forbidden("healthz proxy"), "Authorization", bearer)
}

package agent

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TokenReview asks the API server, as the admin, who the bearer of token
// is for the given audiences (none: the API server's own): a token a
// kubelet requested for a pod authenticates as the pod's service account,
// with the pod's name and UID in the user's extra.
func TokenReview(t testing.TB, admin kubernetes.Interface, token string, audiences ...string) authenticationv1.TokenReviewStatus {
	t.Helper()
	r, err := admin.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	return r.Status
}

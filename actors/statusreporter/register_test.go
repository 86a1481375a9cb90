package statusreporter

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// register says whether it created the Node, which alone starts upstream's
// node start-up figures from the registration on.
func TestRegisterSaysCreated(t *testing.T) {
	kube := fake.NewClientset()
	initial := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for i, want := range []bool{true, false} {
		node, created, err := register(context.Background(), kube, initial.DeepCopy())
		if err != nil || node == nil || created != want {
			t.Fatalf("attempt %d: %v created %t err %v, want created %t", i, node, created, err, want)
		}
	}
}

package runtimeclass

import (
	"context"
	"errors"
	"testing"
	"time"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	nodev1listers "k8s.io/client-go/listers/node/v1"
)

func ptr(s string) *string { return &s }

func TestLookupRuntimeHandler(t *testing.T) {
	client := fake.NewClientset(Class("kata", "kata-qemu"), Class("plain", "runc"))
	m := New(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	cases := []struct {
		name        string
		class       *string
		want        string
		notFound    bool
		wantMessage string
	}{
		{name: "no class", class: nil, want: ""},
		{name: "empty class", class: ptr(""), want: ""},
		{name: "a class", class: ptr("kata"), want: "kata-qemu"},
		{name: "runc", class: ptr("plain"), want: "runc"},
		{name: "unknown", class: ptr("nope"), notFound: true, wantMessage: `runtimeclass.node.k8s.io "nope" not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := m.LookupRuntimeHandler(ctx, c.class)
			if c.notFound {
				if !apierrors.IsNotFound(err) || err.Error() != c.wantMessage {
					t.Fatalf("err = %v, want NotFound %q", err, c.wantMessage)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("= %q, %v; want %q", got, err, c.want)
			}
		})
	}

	// A class made later is seen through the watch.
	if _, err := client.NodeV1().RuntimeClasses().Create(ctx, Class("late", "late-h"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := m.LookupRuntimeHandler(ctx, ptr("late"))
		if err == nil && h == "late-h" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late class not seen: %q, %v", h, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type failingLister struct {
	nodev1listers.RuntimeClassLister
}

func (failingLister) Get(string) (*nodev1.RuntimeClass, error) { return nil, errors.New("boom") }
func (failingLister) List(labels.Selector) ([]*nodev1.RuntimeClass, error) {
	return nil, errors.New("boom")
}

func TestHandlerOtherError(t *testing.T) {
	_, err := Handler(failingLister{}, "x")
	if err == nil || err.Error() != "failed to lookup RuntimeClass x: boom" {
		t.Fatalf("err = %v", err)
	}
}

// Class is a RuntimeClass named name with handler.
func Class(name, handler string) *nodev1.RuntimeClass {
	rc := &nodev1.RuntimeClass{Handler: handler}
	rc.Name = name
	return rc
}

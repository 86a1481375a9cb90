package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

// TestCSITokenRequests: the fake driver's CSIDriver asks for a token of
// an audience and requires republishing. The pod's inline volume is
// published with csi.storage.k8s.io/serviceAccount.tokens in its volume
// context: the audience's token, which the API server authenticates for
// that audience as the pod's service account bound to the pod, with its
// expiry. The volume is published again while the pod runs, and the
// token never shows in actorlet's log.
func TestCSITokenRequests(t *testing.T) {
	n := newCSINode(t, false, agent.WithConfig("syncFrequency: 10s\n"))
	const audience = "vault.csi.actorlet.example.com"
	drivers := n.Admin.StorageV1().CSIDrivers()
	obj, err := drivers.Get(context.Background(), driver, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes, exp := true, int64(900)
	obj.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: audience, ExpirationSeconds: &exp}}
	obj.Spec.RequiresRepublish = &yes
	if _, err := drivers.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	inline := v1.Volume{Name: "secrets", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driver}}}
	pod := n.Run(t, n.NewPod("token", []v1.Volume{inline}, n.Sleeper("c", mnt("secrets", "/secrets"))))
	publishes := func() []fakeplugin.Call {
		var out []fakeplugin.Call
		for _, c := range n.plugin.Calls() {
			if c.Method == "NodePublishVolume" {
				out = append(out, c)
			}
		}
		return out
	}
	first := publishes()
	if len(first) == 0 {
		t.Fatal("no NodePublishVolume")
	}
	raw := first[0].VolumeContext["csi.storage.k8s.io/serviceAccount.tokens"]
	var tokens map[string]authenticationv1.TokenRequestStatus
	if err := json.Unmarshal([]byte(raw), &tokens); err != nil {
		t.Fatalf("the volume context's tokens %q: %v", raw, err)
	}
	tok, ok := tokens[audience]
	if len(tokens) != 1 || !ok || tok.Token == "" {
		t.Fatalf("tokens for audiences %q, want one for %s", slices.Sorted(maps.Keys(tokens)), audience)
	}
	if _, ok := first[0].Secrets["csi.storage.k8s.io/serviceAccount.tokens"]; ok {
		t.Error("the tokens are in the secrets too")
	}
	if left := time.Until(tok.ExpirationTimestamp.Time); left <= 0 || left > time.Duration(exp)*time.Second {
		t.Errorf("the token expires in %v, want within %d s", left, exp)
	}
	st := agent.TokenReview(t, n.Admin, tok.Token, audience)
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+n.NS+":default" ||
		!slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-name"], []string{"token"}) ||
		!slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-uid"], []string{string(pod.UID)}) ||
		!slices.Contains(st.Audiences, audience) {
		t.Errorf("TokenReview: authenticated %v as %q, extra %v, audiences %v, error %q", st.Authenticated, st.User.Username,
			st.User.Extra, st.Audiences, st.Error)
	}
	// The API server's own audience is not the token's.
	if st := agent.TokenReview(t, n.Admin, tok.Token); st.Authenticated {
		t.Errorf("the token authenticates for the API server's audience: %+v", st.User)
	}

	agent.Eventually(t, "NodePublishVolume called again (requiresRepublish)", 90*time.Second, func() error {
		if c := len(publishes()); c < 2 {
			return fmt.Errorf("%d publishes", c)
		}
		return nil
	})
	for _, c := range publishes() {
		if c.Path != first[0].Path || !strings.Contains(c.VolumeContext["csi.storage.k8s.io/serviceAccount.tokens"], audience) {
			t.Errorf("a republish at %s with context keys of %d, want %s with the tokens", c.Path, len(c.VolumeContext), first[0].Path)
		}
	}
	if !kubelet.Upstream && strings.Contains(n.Logs(), tok.Token) {
		t.Error("the token is in actorlet's log")
	}
}

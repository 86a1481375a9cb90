package imagepull

import (
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

const (
	privateImage = "registry.example/private/app:1.0"
	privateName  = "registry.example/private/app"
)

var (
	secretA      = Secret{UID: "uid-a", Namespace: "a", Name: "regcred", CredentialHash: "hash-good"}
	secretB      = Secret{UID: "uid-b", Namespace: "b", Name: "regcred", CredentialHash: "hash-good"}
	secretBWrong = Secret{UID: "uid-b2", Namespace: "b", Name: "wrong", CredentialHash: "hash-wrong"}
	// secretARotated is secret A with new credentials.
	secretARotated = Secret{UID: "uid-a", Namespace: "a", Name: "regcred", CredentialHash: "hash-new"}
)

func mustPolicy(t *testing.T, kind kubeletconfigv1beta1.ImagePullCredentialsVerificationPolicy, allow ...string) *Policy {
	t.Helper()
	p, err := NewPolicy(kind, allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func recordWith(creds Credentials) *Record {
	return &Record{ImageRef: "sha256:ref", CredentialMapping: map[string]Credentials{privateName: creds}}
}

// TestDecide is the decision of whether a pod must pull an image present
// on the node: each policy, with the image preloaded (no record), pulled
// with pod A's secret, pulled anonymously, or pulled with credentials
// unknown, for a pod without secrets, with A's secret, with another
// secret holding the same credentials, and with a wrong one.
func TestDecide(t *testing.T) {
	const (
		never     = kubeletconfigv1beta1.NeverVerify
		preloaded = kubeletconfigv1beta1.NeverVerifyPreloadedImages
		allowlist = kubeletconfigv1beta1.NeverVerifyAllowlistedImages
		always    = kubeletconfigv1beta1.AlwaysVerify
	)
	withA := recordWith(Credentials{KubernetesSecrets: []Secret{secretA}})
	accountS := ServiceAccount{UID: "uid-s", Namespace: "a", Name: "puller"}
	accountT := ServiceAccount{UID: "uid-t", Namespace: "a", Name: "other"}
	forS := recordWith(Credentials{KubernetesServiceAccounts: []ServiceAccount{accountS}})
	withAAndS := recordWith(Credentials{KubernetesSecrets: []Secret{secretA}, KubernetesServiceAccounts: []ServiceAccount{accountS}})
	anonymous := recordWith(Credentials{NodePodsAccessible: true})
	unknown := &Record{ImageRef: "sha256:ref"}
	for _, tc := range []struct {
		name      string
		policy    kubeletconfigv1beta1.ImagePullCredentialsVerificationPolicy
		allow     []string
		record    *Record
		intent    bool // an intent without a record: a pull under way or interrupted
		pod       []Secret
		account   *ServiceAccount // the pod's, as a plugin gave credentials for it
		podErr    error
		wantPull  bool
		remember  *Secret
		wantErr   bool
		noSecrets bool // the pod's secrets must not be looked up
	}{
		// The image was pulled with A's secret.
		{name: "default: pulled with A, pod without secret", policy: preloaded, record: withA, wantPull: true},
		{name: "default: pulled with A, pod with A", policy: preloaded, record: withA, pod: []Secret{secretA}},
		{name: "default: pulled with A, pod with the same credentials in B", policy: preloaded, record: withA, pod: []Secret{secretB}, remember: &secretB},
		{name: "default: pulled with A, pod with a wrong secret", policy: preloaded, record: withA, pod: []Secret{secretBWrong}, wantPull: true},
		{name: "default: pulled with A, pod with a wrong then the same", policy: preloaded, record: withA, pod: []Secret{secretBWrong, secretB}, remember: &secretB},
		{name: "default: pulled with A, A's credentials changed", policy: preloaded, record: withA, pod: []Secret{secretARotated}, remember: &secretARotated},
		{name: "default: pulled with A, secrets unreadable", policy: preloaded, record: withA, podErr: errors.New("bad secret"), wantPull: true, wantErr: true},
		{name: "never verify: pulled with A, pod without secret", policy: never, record: withA, noSecrets: true},
		{name: "always: pulled with A, pod without secret", policy: always, record: withA, wantPull: true},
		{name: "always: pulled with A, pod with A", policy: always, record: withA, pod: []Secret{secretA}},
		{name: "allowlisted: pulled with A, image listed", policy: allowlist, allow: []string{privateName}, record: withA, noSecrets: true},
		{name: "allowlisted: pulled with A, prefix listed", policy: allowlist, allow: []string{"registry.example/*"}, record: withA, noSecrets: true},
		{name: "allowlisted: pulled with A, not listed", policy: allowlist, allow: []string{"registry.example/public/*"}, record: withA, wantPull: true},

		// Pulled with a plugin's credentials for service account S.
		{name: "default: pulled for S, pod of S", policy: preloaded, record: forS, account: &accountS},
		{name: "default: pulled for S, pod of another account", policy: preloaded, record: forS, account: &accountT, wantPull: true},
		{name: "default: pulled for S, pod without plugin credentials", policy: preloaded, record: forS, wantPull: true},
		{name: "default: pulled for S, pod with A's secret", policy: preloaded, record: forS, pod: []Secret{secretA}, wantPull: true},
		{name: "default: pulled with A and for S, pod of S", policy: preloaded, record: withAAndS, account: &accountS},
		{name: "always: pulled for S, pod of S", policy: always, record: forS, account: &accountS},

		// The image was pulled without credentials: any pod of the node.
		{name: "default: anonymous, pod without secret", policy: preloaded, record: anonymous, noSecrets: true},
		{name: "always: anonymous, pod without secret", policy: always, record: anonymous, noSecrets: true},

		// Pulled by a kubelet, credentials unknown (a pull interrupted).
		{name: "default: credentials unknown, pod with A", policy: preloaded, record: unknown, pod: []Secret{secretA}, wantPull: true, noSecrets: true},
		{name: "default: an intent only", policy: preloaded, intent: true, wantPull: true, noSecrets: true},

		// Preloaded: on the node without any record.
		{name: "default: preloaded", policy: preloaded, noSecrets: true},
		{name: "never verify: preloaded", policy: never, noSecrets: true},
		{name: "always: preloaded", policy: always, wantPull: true, noSecrets: true},
		{name: "allowlisted: preloaded, not listed", policy: allowlist, wantPull: true, noSecrets: true},
		{name: "allowlisted: preloaded, listed", policy: allowlist, allow: []string{privateName}, noSecrets: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			looked := false
			v, err := decide(mustPolicy(t, tc.policy, tc.allow...), privateImage, tc.record, tc.record != nil || tc.intent,
				func() (PodCredentials, error) {
					looked = true
					return PodCredentials{Secrets: tc.pod, ServiceAccount: tc.account}, tc.podErr
				})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t", err, tc.wantErr)
			}
			if v.mustPull != tc.wantPull {
				t.Errorf("mustPull = %t, want %t", v.mustPull, tc.wantPull)
			}
			if !reflect.DeepEqual(v.remember, tc.remember) {
				t.Errorf("remember = %+v, want %+v", v.remember, tc.remember)
			}
			if tc.noSecrets && looked {
				t.Error("the pod's secrets were looked up")
			}
		})
	}
}

// TestDecideOtherName: a record's credentials are per image name; the
// same image ID under another name is verified for that name.
func TestDecideOtherName(t *testing.T) {
	rec := recordWith(Credentials{NodePodsAccessible: true})
	v, err := decide(mustPolicy(t, ""), "registry.example/other/app:1.0", rec, true, secrets())
	if err != nil || !v.mustPull {
		t.Fatalf("decide = %+v, %v; want a pull", v, err)
	}
}

// TestMerge follows upstream's Test_pulledRecordMergeNewCreds.
func TestMerge(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	old := metav1.NewTime(now.Add(-time.Hour))
	base := func(c Credentials) *Record {
		return &Record{ImageRef: "ref", LastUpdatedTime: old, CredentialMapping: map[string]Credentials{privateName: c}}
	}
	for _, tc := range []struct {
		name    string
		record  *Record
		creds   *Credentials
		want    *Record
		changed bool
	}{
		{"new record with a secret", nil, &Credentials{KubernetesSecrets: []Secret{secretA}},
			&Record{ImageRef: "ref", LastUpdatedTime: metav1.NewTime(now), CredentialMapping: map[string]Credentials{privateName: {KubernetesSecrets: []Secret{secretA}}}}, true},
		{"new record, credentials unknown", nil, nil,
			&Record{ImageRef: "ref", LastUpdatedTime: metav1.NewTime(now), CredentialMapping: map[string]Credentials{}}, true},
		{"nothing to add", base(Credentials{KubernetesSecrets: []Secret{secretA}}), nil, base(Credentials{KubernetesSecrets: []Secret{secretA}}), false},
		{"the same secret again", base(Credentials{KubernetesSecrets: []Secret{secretA}}), &Credentials{KubernetesSecrets: []Secret{secretA}},
			base(Credentials{KubernetesSecrets: []Secret{secretA}}), false},
		{"another secret, sorted in", base(Credentials{KubernetesSecrets: []Secret{secretB}}), &Credentials{KubernetesSecrets: []Secret{secretA}},
			&Record{ImageRef: "ref", LastUpdatedTime: metav1.NewTime(now), CredentialMapping: map[string]Credentials{privateName: {KubernetesSecrets: []Secret{secretA, secretB}}}}, true},
		{"a secret's new hash replaces the old", base(Credentials{KubernetesSecrets: []Secret{secretA}}), &Credentials{KubernetesSecrets: []Secret{secretARotated}},
			&Record{ImageRef: "ref", LastUpdatedTime: metav1.NewTime(now), CredentialMapping: map[string]Credentials{privateName: {KubernetesSecrets: []Secret{secretARotated}}}}, true},
		{"anonymous replaces the secrets", base(Credentials{KubernetesSecrets: []Secret{secretA}}), &Credentials{NodePodsAccessible: true},
			&Record{ImageRef: "ref", LastUpdatedTime: metav1.NewTime(now), CredentialMapping: map[string]Credentials{privateName: {NodePodsAccessible: true}}}, true},
		{"anonymous stays", base(Credentials{NodePodsAccessible: true}), &Credentials{KubernetesSecrets: []Secret{secretA}},
			base(Credentials{NodePodsAccessible: true}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *Record
			if tc.record != nil {
				before = tc.record.DeepCopy()
			}
			got, changed, err := merge(tc.record, "ref", privateImage, tc.creds, now)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("merge = %+v, %t; want %+v, %t", got, changed, tc.want, tc.changed)
			}
			if tc.record != nil && !reflect.DeepEqual(tc.record, before) {
				t.Error("the record passed in was modified")
			}
		})
	}
}

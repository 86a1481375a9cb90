package credprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/actorlet/actorlet/internal/registryauth"
)

// fakeAccounts are service accounts by name and the tokens they give: the
// token is the account's name and a counter, so that every request gets a
// new one unless the test fixes it.
type fakeAccounts struct {
	accounts map[string]*corev1.ServiceAccount
	token    string // when set, every token
	getErr   error
	tokenErr error
	asked    []*authenticationv1.TokenRequest
}

func (f *fakeAccounts) ServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	sa, ok := f.accounts[namespace+"/"+name]
	if !ok {
		return nil, fmt.Errorf("serviceaccounts %q not found", name)
	}
	return sa, nil
}

func (f *fakeAccounts) Token(_ context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	f.asked = append(f.asked, tr)
	token := f.token
	if token == "" {
		token = fmt.Sprintf("%s/%s-%d", namespace, name, len(f.asked))
	}
	return &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: token}}, nil
}

// seen is a request the plugin was run with.
type seen struct {
	token       string
	annotations map[string]string
}

// TestServiceAccountTokenMode: what a provider with tokenAttributes is
// told, when it is not run, and how its answers are cached, as upstream's
// pluginProvider.provide.
func TestServiceAccountTokenMode(t *testing.T) {
	yes, no := true, false
	account := func(name, uid string, annotations map[string]string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), Annotations: annotations}}
	}
	fixture := map[string]*corev1.ServiceAccount{
		"ns/puller": account("puller", "uid-puller", map[string]string{"example.com/role": "pull", "example.com/team": "a", "other": "x"}),
		"ns/plain":  account("plain", "uid-plain", nil),
		"ns/second": account("second", "uid-second", map[string]string{"example.com/role": "pull"}),
	}
	pod := func(name, sa string) Pod {
		return Pod{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ServiceAccountName: sa}
	}
	tests := []struct {
		name      string
		require   *bool
		cacheType kubeletconfigv1.ServiceAccountTokenCacheType
		accounts  *fakeAccounts // nil: standalone
		echo      bool          // the plugin answers the token as the password
		pods      []Pod
		wantRuns  []seen // the plugin's runs, in order
		wantErr   string // of the last pod's provide
		wantNone  bool   // the last pod gets no credentials
	}{
		{name: "a pod without a service account, one required", require: &yes, accounts: &fakeAccounts{},
			pods: []Pod{pod("p", "")}, wantNone: true},
		{name: "a pod without a service account, none required", require: &no, accounts: &fakeAccounts{},
			pods: []Pod{pod("p", "")}, wantRuns: []seen{{}}},
		{name: "an account without a required annotation", require: &yes, accounts: &fakeAccounts{},
			pods: []Pod{pod("p", "plain")}, wantNone: true},
		{name: "the token and the annotations asked for", require: &yes, accounts: &fakeAccounts{},
			pods:     []Pod{pod("p", "puller")},
			wantRuns: []seen{{token: "ns/puller-1", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}}}},
		{name: "ServiceAccount cache: another pod of the account uses the answer", require: &yes, accounts: &fakeAccounts{},
			pods:     []Pod{pod("p", "puller"), pod("q", "puller")},
			wantRuns: []seen{{token: "ns/puller-1", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}}}},
		{name: "ServiceAccount cache: another account runs the plugin again", require: &yes, accounts: &fakeAccounts{},
			pods: []Pod{pod("p", "puller"), pod("q", "second")},
			wantRuns: []seen{{token: "ns/puller-1", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}},
				{token: "ns/second-2", annotations: map[string]string{"example.com/role": "pull"}}}},
		{name: "Token cache: a new token runs the plugin again", require: &yes, cacheType: "Token", accounts: &fakeAccounts{},
			pods: []Pod{pod("p", "puller"), pod("q", "puller")},
			wantRuns: []seen{{token: "ns/puller-1", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}},
				{token: "ns/puller-2", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}}}},
		{name: "Token cache: the same token uses the answer", require: &yes, cacheType: "Token", accounts: &fakeAccounts{token: "same"},
			pods:     []Pod{pod("p", "puller"), pod("q", "puller")},
			wantRuns: []seen{{token: "same", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}}}},
		{name: "the token as the password with the ServiceAccount cache", require: &yes, accounts: &fakeAccounts{}, echo: true,
			pods:     []Pod{pod("p", "puller")},
			wantRuns: []seen{{token: "ns/puller-1", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}}},
			wantErr:  "credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'"},
		{name: "the token as the password with the Token cache", require: &yes, cacheType: "Token", accounts: &fakeAccounts{}, echo: true,
			pods:     []Pod{pod("p", "puller")},
			wantRuns: []seen{{token: "ns/puller-1", annotations: map[string]string{"example.com/role": "pull", "example.com/team": "a"}}}},
		{name: "the account cannot be read", require: &yes, accounts: &fakeAccounts{getErr: errors.New("forbidden")},
			pods: []Pod{pod("p", "puller")}, wantErr: "failed to get service account: forbidden"},
		{name: "no token", require: &yes, accounts: &fakeAccounts{tokenErr: errors.New("not authorized to request tokens for audience")},
			pods: []Pod{pod("p", "puller")}, wantErr: "failed to get service account token: not authorized to request tokens for audience"},
		{name: "standalone", require: &yes, pods: []Pod{pod("p", "puller")},
			wantErr: "failed to get service account: cannot get ServiceAccounts when kubelet is in standalone mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cacheType := tt.cacheType
			if cacheType == "" {
				cacheType = kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType
			}
			p, _, _ := newTestPlugin([]string{"*.registry.io"}, 0, nil)
			var runs []seen
			p.run = func(_ context.Context, request []byte) ([]byte, error) {
				var req credentialproviderv1.CredentialProviderRequest
				if err := json.Unmarshal(request, &req); err != nil {
					return nil, err
				}
				runs = append(runs, seen{token: req.ServiceAccountToken, annotations: req.ServiceAccountAnnotations})
				password := "pass"
				if tt.echo {
					password = req.ServiceAccountToken
				}
				return json.Marshal(credentialproviderv1.CredentialProviderResponse{
					TypeMeta:      metav1.TypeMeta{Kind: "CredentialProviderResponse", APIVersion: v1},
					CacheKeyType:  credentialproviderv1.RegistryPluginCacheKeyType,
					CacheDuration: &metav1.Duration{Duration: 600e9},
					Auth:          map[string]credentialproviderv1.AuthConfig{"*.registry.io": {Username: "user", Password: password}},
				})
			}
			var accounts ServiceAccounts
			if tt.accounts != nil {
				tt.accounts.accounts = fixture
				accounts = tt.accounts
			}
			p.accounts = newServiceAccounts(&kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "registry.io",
				RequireServiceAccount: tt.require, CacheType: cacheType,
				RequiredServiceAccountAnnotationKeys: []string{"example.com/role"},
				OptionalServiceAccountAnnotationKeys: []string{"example.com/team", "example.com/absent"}}, accounts)
			var auth map[string]credentialproviderv1.AuthConfig
			var ref registryauth.ServiceAccountRef
			var err error
			for _, pd := range tt.pods {
				auth, ref, err = p.provide(context.Background(), "a.registry.io/app", pd)
			}
			// The answer names the last pod's account, whose pods alone
			// may use an image pulled with it.
			last := tt.pods[len(tt.pods)-1]
			wantRef := registryauth.ServiceAccountRef{}
			if sa, ok := fixture["ns/"+last.ServiceAccountName]; ok && len(auth) > 0 {
				wantRef = registryauth.ServiceAccountRef{UID: string(sa.UID), Namespace: "ns", Name: sa.Name}
			}
			if ref != wantRef {
				t.Errorf("service account %+v, want %+v", ref, wantRef)
			}
			if got := fmt.Sprint(err); (tt.wantErr == "" && err != nil) || (tt.wantErr != "" && got != tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && (len(auth) == 0) != tt.wantNone {
				t.Errorf("credentials %v, want none: %v", auth, tt.wantNone)
			}
			if fmt.Sprint(runs) != fmt.Sprint(tt.wantRuns) {
				t.Errorf("runs %v, want %v", runs, tt.wantRuns)
			}
			if tt.accounts == nil {
				return
			}
			for i, tr := range tt.accounts.asked {
				pd := tt.pods[i]
				ref := tr.Spec.BoundObjectRef
				if len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != "registry.io" || tr.Spec.ExpirationSeconds != nil ||
					ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name != pd.Name || ref.UID != pd.UID ||
					tr.UID != fixture["ns/"+pd.ServiceAccountName].UID {
					t.Errorf("token request %d: %+v, want one for audience registry.io bound to pod %s with the account's UID", i, tr, pd.Name)
				}
			}
		})
	}
}

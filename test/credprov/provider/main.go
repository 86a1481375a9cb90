// Command provider is an image credential provider plugin for the tests
// (test/credprov): it answers every CredentialProviderRequest with the
// credentials of its environment, set by the CredentialProviderConfig,
// and appends each request to a file the test reads: its image, and in
// service account token mode the token's audience, pod and service account
// (never the token) and the annotations told.
//
//	CREDPROV_LOG             the file of the requests
//	CREDPROV_REQUIRE_TOKEN   when set, no credentials for a request without a token
//	CREDPROV_REGISTRY        the registry (glob) the credentials are for
//	CREDPROV_USER, _PASSWORD the credentials
//	CREDPROV_CACHE_KEY_TYPE  Image, Registry or Global
//	CREDPROV_CACHE_DURATION  the answer's cacheDuration ("": none)
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
}

func run() error {
	var req credentialproviderv1.CredentialProviderRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	if log := os.Getenv("CREDPROV_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f, describe(&req))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	resp := credentialproviderv1.CredentialProviderResponse{
		TypeMeta:     metav1.TypeMeta{Kind: "CredentialProviderResponse", APIVersion: req.APIVersion},
		CacheKeyType: credentialproviderv1.PluginCacheKeyType(os.Getenv("CREDPROV_CACHE_KEY_TYPE")),
		Auth: map[string]credentialproviderv1.AuthConfig{
			os.Getenv("CREDPROV_REGISTRY"): {Username: os.Getenv("CREDPROV_USER"), Password: os.Getenv("CREDPROV_PASSWORD")},
		},
	}
	if os.Getenv("CREDPROV_REQUIRE_TOKEN") != "" && req.ServiceAccountToken == "" {
		resp.Auth = nil
	}
	if d := os.Getenv("CREDPROV_CACHE_DURATION"); d != "" {
		duration, err := time.ParseDuration(d)
		if err != nil {
			return err
		}
		resp.CacheDuration = &metav1.Duration{Duration: duration}
	}
	return json.NewEncoder(os.Stdout).Encode(&resp)
}

// describe is the request as the log shows it: the image, then for a
// token its claims that matter here and the annotations, sorted.
func describe(req *credentialproviderv1.CredentialProviderRequest) string {
	if req.ServiceAccountToken == "" {
		return req.Image
	}
	var claims struct {
		Aud  []string `json:"aud"`
		Kube struct {
			Namespace      string                `json:"namespace"`
			Pod            struct{ Name string } `json:"pod"`
			ServiceAccount struct{ Name string } `json:"serviceaccount"`
		} `json:"kubernetes.io"`
	}
	parts := strings.Split(req.ServiceAccountToken, ".")
	if len(parts) != 3 {
		return req.Image + " token=malformed"
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return req.Image + " token=malformed"
	}
	var annotations []string
	for k, v := range req.ServiceAccountAnnotations {
		annotations = append(annotations, k+"="+v+",")
	}
	slices.Sort(annotations)
	return fmt.Sprintf("%s aud=%s pod=%s/%s sa=%s annotations=%s", req.Image, strings.Join(claims.Aud, ","),
		claims.Kube.Namespace, claims.Kube.Pod.Name, claims.Kube.ServiceAccount.Name, strings.Join(annotations, ""))
}

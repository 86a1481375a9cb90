// Command provider is an image credential provider plugin for the tests
// (test/credprov): it answers every CredentialProviderRequest with the
// credentials of its environment, set by the CredentialProviderConfig,
// and appends each request's image to a file the test reads.
//
//	CREDPROV_LOG             the file of the requests' images
//	CREDPROV_REGISTRY        the registry (glob) the credentials are for
//	CREDPROV_USER, _PASSWORD the credentials
//	CREDPROV_CACHE_KEY_TYPE  Image, Registry or Global
//	CREDPROV_CACHE_DURATION  the answer's cacheDuration ("": none)
package main

import (
	"encoding/json"
	"fmt"
	"os"
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
		_, err = fmt.Fprintln(f, req.Image)
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
	if d := os.Getenv("CREDPROV_CACHE_DURATION"); d != "" {
		duration, err := time.ParseDuration(d)
		if err != nil {
			return err
		}
		resp.CacheDuration = &metav1.Duration{Duration: duration}
	}
	return json.NewEncoder(os.Stdout).Encode(&resp)
}

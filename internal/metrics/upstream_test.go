package metrics

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestImageSizeBucket(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		want string
	}{
		{0, "N/A"},
		{1, "0-10MB"},
		{10 << 20, "0-10MB"},
		{10<<20 + 1, "10MB-100MB"},
		{700 << 20, "500MB-1GB"},
		{3 << 30, "1GB-5GB"},
		{200 << 30, "GT100GB"},
	} {
		if got := ImageSizeBucket(tc.size); got != tc.want {
			t.Errorf("ImageSizeBucket(%d) = %q, want %q", tc.size, got, tc.want)
		}
	}
}

func TestHTTPPath(t *testing.T) {
	for path, want := range map[string]string{
		"/pods":                       "pods",
		"/pods/":                      "pods",
		"/metrics":                    "metrics",
		"/metrics/cadvisor":           "metrics/cadvisor",
		"/metrics/nosuch":             "other",
		"/stats/summary":              "stats",
		"/exec/ns/pod/c":              "exec",
		"/containerLogs/ns/pod/c":     "containerLogs",
		"/a-client-chosen-path/x/y/z": "other",
		"/":                           "other",
	} {
		if got := HTTPPath(path); got != want {
			t.Errorf("HTTPPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestInstrumentHTTP(t *testing.T) {
	h := InstrumentHTTP(ServerReadOnly, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			return
		}
		if got := valueOf(t, HTTPInflightRequests.WithLabelValues("GET", "healthz", ServerReadOnly, "false")); got != 1 {
			t.Errorf("in flight during the request: %v", got)
		}
	}))
	before := valueOf(t, HTTPRequests.WithLabelValues("GET", "healthz", ServerReadOnly, "false"))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/exec/a/b/c", nil))
	if got := valueOf(t, HTTPRequests.WithLabelValues("GET", "healthz", ServerReadOnly, "false")); got != before+1 {
		t.Errorf("requests %v, want %v", got, before+1)
	}
	if got := valueOf(t, HTTPRequests.WithLabelValues("other", "exec", ServerReadOnly, "true")); got != 1 {
		t.Errorf("an unknown method's long-running requests %v, want 1", got)
	}
	if got := valueOf(t, HTTPInflightRequests.WithLabelValues("GET", "healthz", ServerReadOnly, "false")); got != 0 {
		t.Errorf("in flight after: %v", got)
	}
}

// TestUpstreamHelp: upstream's families carry component-base's stability
// level in their help, actorlet's own do not.
func TestUpstreamHelp(t *testing.T) {
	families, err := Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		name, help := f.GetName(), f.GetHelp()
		switch {
		case strings.HasPrefix(name, "actorlet_"), strings.HasPrefix(name, "go_"), strings.HasPrefix(name, "process_"):
			if strings.HasPrefix(help, "[") {
				t.Errorf("%s: %q has a stability level", name, help)
			}
		default:
			if !strings.HasPrefix(help, "[INTERNAL] ") && !strings.HasPrefix(help, "[ALPHA] ") && !strings.HasPrefix(help, "[BETA] ") && !strings.HasPrefix(help, "[STABLE] ") {
				t.Errorf("%s: %q has no stability level", name, help)
			}
		}
	}
}

func TestFeatureAndBuildInfo(t *testing.T) {
	SetFeatureEnabled("SomeGate", "BETA", true)
	if got := valueOf(t, FeatureEnabled.WithLabelValues("SomeGate", "BETA")); got != 1 {
		t.Errorf("feature enabled %v", got)
	}
	SetBuildInfo("v1.37.2+actorlet.0.1.0")
	if got := valueOf(t, BuildInfo.WithLabelValues("1", "37", "v1.37.2+actorlet.0.1.0", "", "", "", runtime.Version(), runtime.Compiler, runtime.GOOS+"/"+runtime.GOARCH)); got != 1 {
		t.Errorf("build info %v", got)
	}
}

// valueOf is a counter's or gauge's value.
func valueOf(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	return value(write(t, m))
}

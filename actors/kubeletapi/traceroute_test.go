package kubeletapi

import (
	"net/http/httptest"
	"testing"
)

// TestTraceRoute: a request's span is named by upstream's route template,
// and the handlers that are no web service of upstream's have none.
func TestTraceRoute(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/pods", "/pods/"},
		{"/runningpods/", "/runningpods/"},
		{"/stats/summary", "/stats/summary"},
		{"/containerLogs/default/web/app", "/containerLogs/{podNamespace}/{podID}/{containerName}"},
		{"/exec/default/web/app", "/exec/{podNamespace}/{podID}/{containerName}"},
		{"/exec/default/web/0a1b/app", "/exec/{podNamespace}/{podID}/{uid}/{containerName}"},
		{"/attach/default/web/app", "/attach/{podNamespace}/{podID}/{containerName}"},
		{"/run/default/web/app", "/run/{podNamespace}/{podID}/{containerName}"},
		{"/portForward/default/web", "/portForward/{podNamespace}/{podID}"},
		{"/portForward/default/web/0a1b", "/portForward/{podNamespace}/{podID}/{uid}"},
		{"/logs/", "/logs/"},
		{"/logs/syslog", "/logs/{logpath:*}"},
		{"/debug/pprof/heap", "/debug/pprof/{subpath:*}"},
		{"/exec/default/web", ""},
		{"/healthz", ""},
		{"/metrics", ""},
		{"/metrics/cadvisor", ""},
		{"/configz", ""},
		{"/debug/actors", ""},
	}
	for _, tc := range tests {
		if got := traceRoute(httptest.NewRequest("GET", tc.path, nil)); got != tc.want {
			t.Errorf("traceRoute(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

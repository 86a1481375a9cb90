package stats

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics/resource as metrics-server does: the text format.
func scrape(t *testing.T, h http.Handler) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics/resource", nil)
	req.Header.Set("Accept", "text/plain")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return families, body
}

// series renders a family's samples as "label=value,...: value @ms".
func series(f *dto.MetricFamily) []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, m := range f.Metric {
		var labels []string
		for _, l := range m.Label {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.GetCounter().GetValue()
		}
		s := strings.Join(labels, ",") + ": " + model.SampleValue(v).String()
		if m.TimestampMs != nil {
			s += " @" + model.Time(m.GetTimestampMs()).String()
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func TestResourceMetrics(t *testing.T) {
	n := newTestNode(t)
	families, body := scrape(t, n.p.ResourceMetricsHandler())
	at200 := " @" + model.TimeFromUnixNano(timeAt(200).UnixNano()).String()
	tests := []struct {
		name string
		want []string
	}{
		{"node_cpu_usage_seconds_total", []string{": 5000" + at200}},
		{"node_memory_working_set_bytes", []string{": 2000000000" + at200}},
		{"node_swap_usage_bytes", []string{": 4096" + at200}},
		{"container_cpu_usage_seconds_total", []string{
			"container=app,namespace=default,pod=web: 1" + at200,
			"container=helper,namespace=batch,pod=job: 0.2" + at200,
			"container=run,namespace=batch,pod=job: 0.1" + at200,
			"container=sidecar,namespace=default,pod=web: 0.5" + at200,
		}},
		{"container_memory_working_set_bytes", []string{
			"container=app,namespace=default,pod=web: 1000" + at200,
			"container=helper,namespace=batch,pod=job: 200" + at200,
			"container=run,namespace=batch,pod=job: 100" + at200,
			"container=sidecar,namespace=default,pod=web: 300" + at200,
		}},
		{"container_start_time_seconds", []string{
			"container=app,namespace=default,pod=web: 1700000101",
			"container=helper,namespace=batch,pod=job: 1700000112",
			"container=run,namespace=batch,pod=job: 1700000111",
			"container=sidecar,namespace=default,pod=web: 1700000102",
		}},
		{"pod_cpu_usage_seconds_total", []string{
			"namespace=batch,pod=job: 0.3" + at200,
			"namespace=default,pod=web: 2.5" + at200,
		}},
		{"pod_memory_working_set_bytes", []string{
			"namespace=batch,pod=job: 300" + at200,
			"namespace=default,pod=web: 40000000" + at200,
		}},
		{"pod_swap_usage_bytes", []string{"namespace=default,pod=web: 0" + at200}},
		// The runtime reports no container swap: no series rather than 0.
		{"container_swap_usage_bytes", nil},
		{"container_swap_limit_bytes", nil},
		{"resource_scrape_error", []string{": 0"}},
	}
	for _, tt := range tests {
		got := series(families[tt.name])
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	for _, help := range []string{
		"# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds",
		"# TYPE container_cpu_usage_seconds_total counter",
		"# TYPE container_memory_working_set_bytes gauge",
	} {
		if !strings.Contains(body, help) {
			t.Errorf("no %q in\n%s", help, body)
		}
	}
	if _, ok := families["scrape_error"]; ok {
		t.Error("scrape_error, deprecated and hidden upstream in 1.37, is served")
	}
}

func TestResourceMetricsScrapeError(t *testing.T) {
	n := newTestNode(t)
	n.cri.fail = map[string]error{"ListContainers": errors.New("rpc error: code = Unavailable")}
	families, _ := scrape(t, n.p.ResourceMetricsHandler())
	if got := series(families["resource_scrape_error"]); len(got) != 1 || got[0] != ": 1" {
		t.Errorf("resource_scrape_error %q, want 1", got)
	}
	if len(families) != 1 {
		var names []string
		for name := range families {
			names = append(names, name)
		}
		t.Errorf("families %v, want resource_scrape_error alone", names)
	}
}

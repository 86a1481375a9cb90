package metrics

import (
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns g's metric families by name.
func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// find returns the metric of mf whose labels include want, nil if none.
func find(mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	if mf == nil {
		return nil
	}
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if have[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// labelNames returns the sorted label names of mf's first metric.
func labelNames(mf *dto.MetricFamily) []string {
	var out []string
	if ms := mf.GetMetric(); len(ms) > 0 {
		for _, l := range ms[0].GetLabel() {
			out = append(out, l.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// write reads one metric (a counter, gauge or histogram child) as a dto.
func write(t *testing.T, m prometheus.Metric) *dto.Metric {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatalf("write %s: %v", m.Desc(), err)
	}
	return &out
}

package stats

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestSummaryHandler(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		target     string
		body       string
		fail       string // CRI method that fails
		wantStatus int
		wantFs     bool   // node.fs present: the full summary
		wantBody   string // for errors
	}{
		{"full", http.MethodGet, "/stats/summary", "", "", http.StatusOK, true, ""},
		{"only cpu and memory", http.MethodGet, "/stats/summary?only_cpu_and_memory=true", "", "", http.StatusOK, false, ""},
		{"only_cpu_and_memory must be true", http.MethodGet, "/stats/summary?only_cpu_and_memory=1", "", "", http.StatusOK, true, ""},
		{"only_cpu_and_memory given twice", http.MethodGet, "/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true", "", "", http.StatusOK, true, ""},
		{"POST form", http.MethodPost, "/stats/summary", url.Values{"only_cpu_and_memory": {"true"}}.Encode(), "", http.StatusOK, false, ""},
		{"CRI failure", http.MethodGet, "/stats/summary", "", "ListContainerStats", http.StatusInternalServerError, false,
			"Internal Error: CRI ListContainerStats: rpc error: code = Unavailable"},
		{"wrong method", http.MethodDelete, "/stats/summary", "", "", http.StatusMethodNotAllowed, false, "not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNode(t)
			if tt.fail != "" {
				n.cri.fail = map[string]error{tt.fail: errors.New("rpc error: code = Unavailable")}
			}
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			rec := httptest.NewRecorder()
			n.p.SummaryHandler(nil).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != http.StatusOK {
				if !strings.Contains(rec.Body.String(), tt.wantBody) {
					t.Errorf("body %q, want %q in it", rec.Body, tt.wantBody)
				}
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var s statsapi.Summary
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
				t.Fatalf("decode: %v\n%s", err, rec.Body)
			}
			if s.Node.NodeName != "node-1" || len(s.Pods) != 2 || (s.Node.Fs != nil) != tt.wantFs {
				t.Errorf("node %q, %d pods, fs %v; want node-1, 2 pods, fs %v", s.Node.NodeName, len(s.Pods), s.Node.Fs != nil, tt.wantFs)
			}
		})
	}
}

func TestSummaryJSONShape(t *testing.T) {
	n := newTestNode(t)
	n.cri.setStats(nil)
	rec := httptest.NewRecorder()
	n.p.SummaryHandler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats/summary", nil))
	body := rec.Body.String()
	// Indented like go-restful's output, and "pods": [] rather than null
	// when nothing runs, as upstream.
	if !strings.HasPrefix(body, "{\n \"node\": {") || !strings.Contains(body, "\"pods\": []") {
		t.Errorf("body:\n%s", body)
	}
}

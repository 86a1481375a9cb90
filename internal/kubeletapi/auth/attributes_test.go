package auth

import (
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, target string
		verb           string
		subresources   []string
	}{
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/stats/", "get", []string{"stats"}},
		{"GET", "/statsx", "get", []string{"proxy"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/metrics/probes?x=1", "get", []string{"metrics"}},
		{"GET", "/metricsx", "get", []string{"proxy"}},
		{"GET", "/logs/", "get", []string{"log"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/logs", "get", []string{"log"}},
		{"POST", "/checkpoint/ns/pod/c", "create", []string{"checkpoint"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/pods?fieldSelector=spec.nodeName%3Dx", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods", "get", []string{"pods", "proxy"}},
		{"GET", "/allocatedPods", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/ping?verbose", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthzz", "get", []string{"proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/spec/", "get", []string{"proxy"}},
		{"GET", "/", "get", []string{"proxy"}},
		{"POST", "/exec/ns/pod/c?command=ls", "create", []string{"proxy"}},
		{"GET", "/containerLogs/ns/pod/c?follow=true", "get", []string{"proxy"}},
		{"GET", "/debug/pprof/", "get", []string{"proxy"}},
		{"PUT", "/pods", "update", []string{"pods", "proxy"}},
		{"PATCH", "/configz", "patch", []string{"configz", "proxy"}},
		{"DELETE", "/stats/x", "delete", []string{"stats"}},
		{"HEAD", "/healthz", "", []string{"healthz", "proxy"}},
		{"OPTIONS", "/metrics", "", []string{"metrics"}},
	}
	u := User{Name: "alice", Groups: []string{"g"}}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			attrs := RequestAttributes(r, u, "node-a")
			var subresources []string
			for _, a := range attrs {
				subresources = append(subresources, a.Subresource)
				want := Attributes{User: u, Verb: tc.verb, APIVersion: "v1", Resource: "nodes",
					Subresource: a.Subresource, Name: "node-a", Path: r.URL.Path}
				if !reflect.DeepEqual(a, want) {
					t.Errorf("attributes %+v, want %+v", a, want)
				}
			}
			if !reflect.DeepEqual(subresources, tc.subresources) {
				t.Errorf("subresources %v, want %v", subresources, tc.subresources)
			}
		})
	}
}

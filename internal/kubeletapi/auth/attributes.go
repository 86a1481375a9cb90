package auth

import (
	"net/http"
	"strings"
)

// Attributes is what one authorization check asks: may User do Verb on
// the node's Subresource. They are upstream's attributes for the kubelet
// API; only Subresource differs between the checks of one request.
type Attributes struct {
	User        User
	Verb        string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

// fineGrained are the paths with a subresource of their own that is tried
// before the next table's answer, proxy for all of them (upstream's
// KubeletFineGrainedAuthz).
var fineGrained = []struct{ path, subresource string }{
	{"/allocatedPods", "pods"},
	{"/pods", "pods"},
	{"/healthz", "healthz"},
	{"/configz", "configz"},
	{"/runningpods/", "pods"},
}

// coarse maps the other paths to their subresource; anything else is proxy.
var coarse = []struct{ path, subresource string }{
	{"/stats/", "stats"},
	{"/metrics", "metrics"},
	{"/logs/", "log"},
	{"/checkpoint/", "checkpoint"},
	{"/statusz", "statusz"},
	{"/flagz", "configz"},
}

// verbs maps HTTP methods to API verbs; other methods get the empty verb,
// as upstream.
var verbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// RequestAttributes returns the checks for r by u on node nodeName, in
// order: the request is allowed when any of them is, as upstream's
// nodeAuthorizerAttributesGetter.
func RequestAttributes(r *http.Request, u User, nodeName string) []Attributes {
	path := r.URL.Path
	var subresources []string
	for _, f := range fineGrained {
		if isSubpath(path, f.path) {
			subresources = append(subresources, f.subresource)
			break
		}
	}
	last := "proxy"
	for _, c := range coarse {
		if isSubpath(path, c.path) {
			last = c.subresource
			break
		}
	}
	subresources = append(subresources, last)
	attrs := make([]Attributes, len(subresources))
	for i, s := range subresources {
		attrs[i] = Attributes{User: u, Verb: verbs[r.Method], APIVersion: "v1", Resource: "nodes",
			Subresource: s, Name: nodeName, Path: path}
	}
	return attrs
}

// isSubpath reports whether path is prefix or below it.
func isSubpath(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || strings.HasPrefix(path, prefix) && path[len(prefix)] == '/'
}

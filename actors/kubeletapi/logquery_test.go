package kubeletapi

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// A service query's answer is gzip when the client asks for exactly that,
// as upstream's; a file query is the file server's, which never is.
func TestNodeLogQueryGzip(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "svc.log"), []byte("svc line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := New(Params{LogDir: dir, Debugging: Debugging{Handlers: true, SystemLogs: true, SystemLogQuery: true}})().(*Actor)
	h := a.systemLogs()
	for _, tt := range []struct {
		target, accept, encoding, contentType string
	}{
		{"/logs/?query=svc", "gzip", "gzip", "text/plain;charset=UTF-8"},
		{"/logs/?query=svc", "gzip, deflate", "", "text/plain;charset=UTF-8"},
		{"/logs/?query=svc", "", "", "text/plain;charset=UTF-8"},
		{"/logs/?query=./svc.log", "gzip", "", "text/x-log; charset=utf-8"},
	} {
		req := httptest.NewRequest(http.MethodGet, tt.target, nil)
		if tt.accept != "" {
			req.Header.Set("Accept-Encoding", tt.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		body := io.Reader(res.Body)
		if enc := res.Header.Get("Content-Encoding"); enc != tt.encoding {
			t.Errorf("%s with %q: Content-Encoding %q, want %q", tt.target, tt.accept, enc, tt.encoding)
		} else if enc == "gzip" {
			gz, err := gzip.NewReader(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = gz
		}
		got, err := io.ReadAll(body)
		if err != nil || res.StatusCode != http.StatusOK || string(got) != "svc line\n" {
			t.Errorf("%s with %q: %d %q %v", tt.target, tt.accept, res.StatusCode, got, err)
		}
		if ct := res.Header.Get("Content-Type"); ct != tt.contentType {
			t.Errorf("%s: Content-Type %q, want %q", tt.target, ct, tt.contentType)
		}
	}
}

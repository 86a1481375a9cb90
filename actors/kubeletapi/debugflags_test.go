package kubeletapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/internal/logging"
)

// TestDebugFlagsV checks upstream's answers of PUT /debug/flags/v and that
// a good one changes the verbosity (TestListeners checks who reaches it).
func TestDebugFlagsV(t *testing.T) {
	defer logging.SetVerbosity(0)
	logging.SetVerbosity(0)
	for _, tc := range []struct {
		method, body string
		status       int
		says         string
		level        zerolog.Level
	}{
		{method: "PUT", body: "x", status: 400, says: `strconv.ParseUint: parsing "x": invalid syntax`, level: zerolog.InfoLevel},
		{method: "POST", body: "4", status: 406, says: "unsupported http method", level: zerolog.InfoLevel},
		{method: "PUT", body: "4", status: 200, says: "successfully set klog.logging.verbosity to 4", level: zerolog.TraceLevel},
		{method: "PUT", body: "2", status: 200, says: "successfully set klog.logging.verbosity to 2", level: zerolog.DebugLevel},
		{method: "PUT", body: "0", status: 200, says: "successfully set klog.logging.verbosity to 0", level: zerolog.InfoLevel},
	} {
		w := httptest.NewRecorder()
		debugFlagsV(w, httptest.NewRequest(tc.method, "/debug/flags/v", strings.NewReader(tc.body)))
		if w.Code != tc.status || w.Body.String() != tc.says+"\n" || w.Header().Get("Content-Type") != "text/plain" {
			t.Errorf("%s %q: %d %q (%s), want %d %q", tc.method, tc.body, w.Code, w.Body.String(), w.Header().Get("Content-Type"), tc.status, tc.says)
		}
		if got := zerolog.GlobalLevel(); got != tc.level {
			t.Errorf("%s %q: level %v, want %v", tc.method, tc.body, got, tc.level)
		}
	}
}

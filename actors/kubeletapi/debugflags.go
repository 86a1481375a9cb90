package kubeletapi

import (
	"fmt"
	"io"
	"net/http"

	"github.com/actorlet/actorlet/internal/logging"
)

// flagsDisabled is upstream's answer, with status 405, when
// enableDebugFlagsHandler is false.
const flagsDisabled = "flags endpoint is disabled."

// debugFlagsV is upstream's PUT /debug/flags/v (routes.StringFlagPutHandler
// with logs.GlogSetter): the body is the new verbosity, set at once for
// every logger; any other method is 406. Answers are plain text.
func debugFlagsV(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		plainText(w, http.StatusNotAcceptable, "unsupported http method")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<10))
	if err != nil {
		plainText(w, http.StatusBadRequest, "error reading request body: "+err.Error())
		return
	}
	v, err := logging.ParseVerbosity(string(body))
	if err != nil {
		plainText(w, http.StatusBadRequest, err.Error())
		return
	}
	logging.SetVerbosity(v)
	plainText(w, http.StatusOK, fmt.Sprintf("successfully set klog.logging.verbosity to %s", body))
}

func plainText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, text)
}

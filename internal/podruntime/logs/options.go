package logs

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Options are what a container log request asks of the log: the fields of
// v1.PodLogOptions the kubelet acts on. The zero value is the whole log,
// once, without timestamps.
type Options struct {
	// Previous asks for the log of the container's previous instance; the
	// caller acts on it when it chooses the log file.
	Previous bool
	// Follow keeps reading as the log grows, until the container stops.
	Follow bool
	// Timestamps prefixes each line with its RFC3339Nano timestamp.
	Timestamps bool
	// Since skips the lines the runtime logged before it; zero skips none.
	Since time.Time
	// TailLines starts that many lines before the end of the log (a line
	// the runtime split counts once); nil starts at the beginning.
	TailLines *int64
	// LimitBytes stops after that many bytes of output; 0 has no limit.
	LimitBytes int64
	// Stream is v1.LogStreamStdout or v1.LogStreamStderr to read only that
	// stream; "" or v1.LogStreamAll reads both.
	Stream string
}

// QueryError is a query parameter of a log request that cannot be served.
type QueryError struct {
	// Param names the parameter at fault.
	Param string
	// Status is the HTTP status upstream answers with: 400 for a value that
	// does not decode or that needs a disabled feature gate, 422 for a
	// decoded value that fails validation.
	Status int
	msg    string
}

func (e *QueryError) Error() string { return e.msg }

func badValue(param, value, why string) *QueryError {
	return &QueryError{Param: param, Status: http.StatusBadRequest, msg: fmt.Sprintf("%s: %s, got %q", param, why, value)}
}

func invalid(param, value, why string) *QueryError {
	return &QueryError{Param: param, Status: http.StatusUnprocessableEntity, msg: fmt.Sprintf("%s: %s, got %q", param, why, value)}
}

// OptionsFromQuery reads the query of /containerLogs/NS/POD/CONTAINER as the
// API server writes it from v1.PodLogOptions, decodes and validates it as
// upstream's kubelet does, and resolves sinceSeconds against now. The first
// problem found is returned as a *QueryError. splitStreams is the
// PodLogsQuerySplitStreams feature gate: without it only stream=All is
// served.
//
// As upstream: a boolean is true when present with any value but "0" or
// "false"; of a repeated parameter the first value counts; the older "tail"
// parameter stands for tailLines ("all": no tail); other parameters are
// ignored ("container" among them: the path names the container).
func OptionsFromQuery(q url.Values, now time.Time, splitStreams bool) (Options, error) {
	if tail := first(q, "tail"); tail != "" {
		q = maps.Clone(q)
		q["tailLines"] = []string{tail}
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	opts := Options{
		Previous:   flag(q, "previous"),
		Follow:     flag(q, "follow"),
		Timestamps: flag(q, "timestamps"),
	}

	// Decoding: a value that is not of the parameter's type.
	sinceSeconds, hasSinceSeconds, err := integer(q, "sinceSeconds")
	if err != nil {
		return Options{}, err
	}
	tailLines, hasTailLines, err := integer(q, "tailLines")
	if err != nil {
		return Options{}, err
	}
	limitBytes, hasLimitBytes, err := integer(q, "limitBytes")
	if err != nil {
		return Options{}, err
	}
	hasSinceTime := len(q["sinceTime"]) > 0
	var sinceTime time.Time
	if s := first(q, "sinceTime"); s != "" && s != "null" {
		if sinceTime, err = time.Parse(time.RFC3339, s); err != nil {
			return Options{}, badValue("sinceTime", s, "not an RFC3339 time")
		}
	}
	stream, hasStream := first(q, "stream"), len(q["stream"]) > 0

	// Validation, in upstream's order (ValidatePodLogOptions).
	if hasTailLines && tailLines < 0 {
		return Options{}, invalid("tailLines", first(q, "tailLines"), "must be greater than or equal to 0")
	}
	if hasLimitBytes && limitBytes < 1 {
		return Options{}, invalid("limitBytes", first(q, "limitBytes"), "must be greater than 0")
	}
	switch {
	case hasSinceSeconds && hasSinceTime:
		return Options{}, &QueryError{Param: "sinceTime", Status: http.StatusUnprocessableEntity,
			msg: fmt.Sprintf("sinceTime: at most one of sinceTime and sinceSeconds may be given, got sinceTime=%q and sinceSeconds=%q",
				first(q, "sinceTime"), first(q, "sinceSeconds"))}
	case hasSinceSeconds && sinceSeconds < 1:
		return Options{}, invalid("sinceSeconds", first(q, "sinceSeconds"), "must be greater than 0")
	}
	if hasStream {
		switch stream {
		case v1.LogStreamAll:
		case v1.LogStreamStdout, v1.LogStreamStderr:
			if hasTailLines {
				return Options{}, invalid("stream", stream, "cannot be combined with tailLines unless All")
			}
			if !splitStreams {
				return Options{}, badValue("stream", stream, "only All is served without the PodLogsQuerySplitStreams feature gate")
			}
		default:
			return Options{}, invalid("stream", stream, fmt.Sprintf("supported values: %q, %q, %q", v1.LogStreamAll, v1.LogStreamStdout, v1.LogStreamStderr))
		}
		opts.Stream = stream
	}

	if hasTailLines {
		opts.TailLines = &tailLines
	}
	if hasLimitBytes {
		opts.LimitBytes = limitBytes
	}
	switch {
	case hasSinceSeconds && sinceSeconds > int64(math.MaxInt64/time.Second):
		// Further back than a time.Duration reaches (about 292 years),
		// so before any log line; multiplying would wrap around to a
		// time in the future, which skips every line.
	case hasSinceSeconds:
		opts.Since = now.Add(-time.Duration(sinceSeconds) * time.Second)
	case hasSinceTime:
		opts.Since = sinceTime
	}
	return opts, nil
}

func first(q url.Values, name string) string {
	if v := q[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func flag(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// integer is the int64 parameter name, and whether it is given at all.
func integer(q url.Values, name string) (int64, bool, error) {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return 0, false, badValue(name, v[0], "not an integer")
	}
	return n, true, nil
}

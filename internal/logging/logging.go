// Package logging builds actorlet's one logger: zerolog on stderr, in the
// text or json format of the configuration, with upstream's -v verbosity.
package logging

import (
	"fmt"
	"io"
	"strconv"

	"github.com/rs/zerolog"
)

// Formats are the values logging.format / --logging-format accept.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// New returns a logger writing to w in format. Verbosity follows klog's -v
// convention: 0 logs info and above, 1 to 3 add more detail at debug level,
// 4 and above trace (including protoactor's own routine messages).
func New(w io.Writer, format string, verbosity uint32) (zerolog.Logger, error) {
	// Microseconds, as klog's: a pod starts within a second, and its steps
	// can only be told apart in the log at this precision.
	zerolog.TimeFieldFormat = timeFormat
	var out io.Writer
	switch format {
	case FormatJSON:
		out = w
	case FormatText, "":
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: timeFormat, NoColor: true}
	default:
		return zerolog.Nop(), fmt.Errorf("logging format %q: want %q or %q", format, FormatText, FormatJSON)
	}
	// The logger passes every level and the global level filters, so
	// that SetVerbosity reaches every logger derived from this one.
	SetVerbosity(verbosity)
	return zerolog.New(out).Level(zerolog.TraceLevel).With().Timestamp().Logger(), nil
}

// SetVerbosity changes the verbosity of the loggers New made, at run time:
// upstream's PUT /debug/flags/v.
func SetVerbosity(verbosity uint32) {
	zerolog.SetGlobalLevel(Level(verbosity))
}

// ParseVerbosity reads a verbosity as upstream's /debug/flags/v does
// (logs.GlogSetter): a decimal number that fits 32 bits, nothing around it.
func ParseVerbosity(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, err
	}
	return uint32(v), nil
}

const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// Level maps a -v verbosity to a zerolog level.
func Level(verbosity uint32) zerolog.Level {
	switch {
	case verbosity == 0:
		return zerolog.InfoLevel
	case verbosity < 4:
		return zerolog.DebugLevel
	default:
		return zerolog.TraceLevel
	}
}

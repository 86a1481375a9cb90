// Package nodelogs is the node log query, /logs/?query= (issue #37), as
// upstream kubelet v1.37's kubelet_server_journal: with
// enableSystemLogQuery and the NodeLogQuery gate, a request to /logs/ with
// one of the query parameters reads the journal of up to four systemd
// services, or one file under the log directory, instead of the plain file
// server.
//
// Parse and Validate decide, without I/O but the stat Validate is given;
// JournalArgs builds journalctl's command line. Copy runs the query at the
// edge, in the HTTP handler's goroutine, bounded by upstream's 30 s.
package nodelogs

import (
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds.
const (
	maxTailLines     = 100000
	maxServiceLength = 256
	maxServices      = 4
)

// unsafeServiceName matches what a service name may not contain: upstream
// lets only these characters reach journalctl's arguments.
var unsafeServiceName = regexp.MustCompile(`[^a-zA-Z\-_.:0-9@]+`)

// Query is one node log query.
type Query struct {
	// Services are the systemd units (or, failing the journal, the names
	// of log files) asked for: the query values without a slash.
	Services []string
	// Files are the query values with a slash or a backslash, paths under
	// the log directory.
	Files []string
	Options
}

// Options narrow a service's journal; none applies to a file.
type Options struct {
	SinceTime *time.Time
	UntilTime *time.Time
	// TailLines is the number of lines from the end.
	TailLines *int
	// Boot is the boot offset, 0 the current one and negative the ones
	// before.
	Boot *int
	// Pattern is a PCRE2 expression for journalctl --grep.
	Pattern string
}

// set reports whether any option is.
func (o Options) set() bool {
	return o.SinceTime != nil || o.UntilTime != nil || o.TailLines != nil || o.Boot != nil || o.Pattern != ""
}

// Parse reads a query from a request's query string, as upstream's
// newNodeLogQuery: nil and no errors when it has none of the parameters
// (the request is then the plain file server's), the parse errors (400)
// otherwise.
func Parse(v url.Values) (*Query, field.ErrorList) {
	var errs field.ErrorList
	var q Query
	values, present := v["query"]
	for _, s := range values {
		// A slash or a backslash says a file; a value of blanks says
		// nothing.
		if strings.ContainsAny(s, `/\`) {
			q.Files = append(q.Files, s)
		} else if strings.TrimSpace(s) != "" {
			q.Services = append(q.Services, s)
		}
	}
	if present && len(q.Files) == 0 && len(q.Services) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("query"), values, "may not be empty"))
	}
	parseTime := func(name string, into **time.Time) {
		s := v.Get(name)
		if s == "" {
			return
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), s, "invalid time format"))
			return
		}
		*into = &t
	}
	parseInt := func(name string, into **int) {
		s := v.Get(name)
		if s == "" {
			return
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), s, err.Error()))
			return
		}
		*into = &n
	}
	parseTime("sinceTime", &q.SinceTime)
	parseTime("untilTime", &q.UntilTime)
	parseInt("boot", &q.Boot)
	parseInt("tailLines", &q.TailLines)
	q.Pattern = v.Get("pattern")
	if len(errs) > 0 {
		return nil, errs
	}
	if len(q.Services) == 0 && len(q.Files) == 0 && !q.set() {
		return nil, nil
	}
	return &q, nil
}

// Validate checks a parsed query as upstream's validate (406). stat is
// asked about a single file query's path, relative to the log directory,
// and its error is the answer's; it must not leave the directory.
func (q *Query) Validate(stat func(name string) error) field.ErrorList {
	errs := validateServices(q.Services)
	query := field.NewPath("query")
	switch {
	case len(q.Files) == 0 && len(q.Services) == 0:
		errs = append(errs, field.Required(query, "cannot be empty with options"))
	case len(q.Files) > 0 && len(q.Services) > 0:
		errs = append(errs, field.Invalid(query, fmt.Sprintf("%v, %v", q.Files, q.Services), "cannot specify a file and service"))
	case len(q.Files) > 1:
		errs = append(errs, field.Invalid(query, q.Files, "cannot specify more than one file"))
	case len(q.Files) == 1 && q.set():
		errs = append(errs, field.Invalid(query, q.Files, "cannot specify file with options"))
	case len(q.Files) == 1:
		if err := stat(q.Files[0]); err != nil {
			errs = append(errs, field.Invalid(query, q.Files, err.Error()))
		}
	}
	if q.SinceTime != nil && q.UntilTime != nil && q.SinceTime.After(*q.UntilTime) {
		errs = append(errs, field.Invalid(field.NewPath("untilTime"), q.UntilTime, "must be after `sinceTime`"))
	}
	if q.Boot != nil && *q.Boot > 0 {
		errs = append(errs, field.Invalid(field.NewPath("boot"), *q.Boot, "must be less than 1"))
	}
	if q.TailLines != nil {
		if msgs := utilvalidation.IsInRange(*q.TailLines, 0, maxTailLines); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("tailLines"), *q.TailLines, msgs[0]))
		}
	}
	if _, err := syntax.Parse(q.Pattern, syntax.Perl); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("pattern"), q.Pattern, err.Error()))
	}
	return errs
}

// validateServices refuses unsafe names and more than four services.
func validateServices(services []string) field.ErrorList {
	var errs field.ErrorList
	for _, s := range services {
		switch {
		case len(s) > maxServiceLength:
			errs = append(errs, field.Invalid(field.NewPath("query"), s, fmt.Sprintf("length must be less than %d", maxServiceLength)))
		case unsafeServiceName.MatchString(s):
			errs = append(errs, field.Invalid(field.NewPath("query"), s, "input contains unsupported characters"))
		}
	}
	if len(services) > maxServices {
		errs = append(errs, field.TooMany(field.NewPath("query"), len(services), maxServices))
	}
	return errs
}

// journalDate is the layout of journalctl's --since and --until, as
// upstream writes them (UTC, as --utc reads them).
const journalDate = "2006-1-2 15:4:5"

// JournalArgs is journalctl's command line for the services of q that log
// to the journal, as upstream's.
func JournalArgs(q *Query, services []string) []string {
	args := []string{"--utc", "--no-pager", "--output=short-precise"}
	if q.SinceTime != nil {
		args = append(args, "--since="+q.SinceTime.Format(journalDate))
	}
	if q.UntilTime != nil {
		args = append(args, "--until="+q.UntilTime.Format(journalDate))
	}
	if q.TailLines != nil {
		args = append(args, "--pager-end", fmt.Sprintf("--lines=%d", *q.TailLines))
	}
	for _, s := range services {
		if s != "" {
			args = append(args, "--unit="+s)
		}
	}
	if q.Pattern != "" {
		args = append(args, "--grep="+q.Pattern)
	}
	if q.Boot != nil {
		args = append(args, "--boot", strconv.Itoa(*q.Boot))
	}
	return args
}

// UnitsArgs is the journalctl command line that lists the journal's units.
var UnitsArgs = []string{"--field", "_SYSTEMD_UNIT"}

// InJournal reports whether service logs to the journal, from the output
// of journalctl UnitsArgs: upstream's test, a substring "service.service".
func InJournal(units, service string) bool {
	return strings.Contains(units, service+".service")
}

// FileCandidates are the files, relative to the log directory, tried in
// order for a service that does not log to the journal.
func FileCandidates(service string) []string {
	return []string{service, service + ".log", service + "/" + service + ".log"}
}

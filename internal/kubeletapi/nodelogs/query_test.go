package nodelogs

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParse(t *testing.T) {
	at := time.Date(2019, 12, 4, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		query string
		want  *Query
		err   string // the aggregate's message; "" for none
	}{
		{query: "", want: nil},
		{query: "unknown=true", want: nil},
		{query: "sinceTime=", want: nil},
		{query: "boot=", want: nil},
		{query: "sinceTime=2019-12-04+02:00:00", err: `sinceTime: Invalid value: "2019-12-04 02:00:00": invalid time format`},
		{query: "untilTime=2019-12-04+02", err: `untilTime: Invalid value: "2019-12-04 02": invalid time format`},
		{query: "sinceTime=2019-12-04T02:00:00Z", want: &Query{Options: Options{SinceTime: &at}}},
		{query: "untilTime=2019-12-04T02:00:00Z", want: &Query{Options: Options{UntilTime: &at}}},
		{query: "tailLines=100", want: &Query{Options: Options{TailLines: new(100)}}},
		{query: "tailLines=foo", err: `tailLines: Invalid value: "foo": strconv.Atoi: parsing "foo": invalid syntax`},
		{query: "tailLines=+", err: `tailLines: Invalid value: " ": strconv.Atoi: parsing " ": invalid syntax`},
		{query: "pattern=foo", want: &Query{Options: Options{Pattern: "foo"}}},
		{query: "boot=0", want: &Query{Options: Options{Boot: new(0)}}},
		{query: "boot=-23", want: &Query{Options: Options{Boot: new(-23)}}},
		{query: "boot=foo", err: `boot: Invalid value: "foo": strconv.Atoi: parsing "foo": invalid syntax`},
		{query: "query=", err: `query: Invalid value: [""]: may not be empty`},
		{query: "query=+++&query=++++", err: `query: Invalid value: ["   ","    "]: may not be empty`},
		{query: "query=foo", want: &Query{Services: []string{"foo"}}},
		{query: "query=foo&query=bar", want: &Query{Services: []string{"foo", "bar"}}},
		{query: "query=foo&query=/bar", want: &Query{Services: []string{"foo"}, Files: []string{"/bar"}}},
		{query: `query=/foo&query=\bar`, want: &Query{Files: []string{"/foo", `\bar`}}},
		// Every error at once.
		{query: "query=&boot=x&tailLines=y", err: `[query: Invalid value: [""]: may not be empty, boot: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax, tailLines: Invalid value: "y": strconv.Atoi: parsing "y": invalid syntax]`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			v, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Parse(v)
			if msg := aggregate(errs); msg != tt.err {
				t.Fatalf("errors %q, want %q", msg, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func aggregate(errs field.ErrorList) string {
	if agg := errs.ToAggregate(); agg != nil {
		return agg.Error()
	}
	return ""
}

func TestValidate(t *testing.T) {
	since := time.Date(2023, 1, 4, 2, 0, 0, 0, time.UTC)
	until := time.Date(2023, 2, 4, 2, 0, 0, 0, time.UTC)
	escapes := errors.New("statat ../etc/passwd: path escapes from parent")
	tests := []struct {
		name string
		q    Query
		stat error
		err  string
	}{
		{name: "empty", err: "query: Required value: cannot be empty with options"},
		{name: "empty with options", q: Query{Options: Options{SinceTime: &since}}, err: "query: Required value: cannot be empty with options"},
		{name: "one service", q: Query{Services: []string{"svc1"}}},
		{name: "four services", q: Query{Services: []string{"a", "b", "c", "d"}}},
		{name: "five services", q: Query{Services: []string{"a", "b", "c", "d", "e"}}, err: "query: Too many: 5: must have at most 4 items"},
		{name: "service characters", q: Query{Services: []string{"svc.foo", "svc_foo", "svc@foo", "svc:foo-1"}}},
		{name: "service newline", q: Query{Services: []string{"svc\n"}}, err: `query: Invalid value: "svc\n": input contains unsupported characters`},
		{name: "service space", q: Query{Services: []string{"svc foo"}}, err: `query: Invalid value: "svc foo": input contains unsupported characters`},
		{name: "long service", q: Query{Services: []string{strings.Repeat("s", 257)}}, err: `query: Invalid value: "` + strings.Repeat("s", 257) + `": length must be less than 256`},
		{name: "service and file", q: Query{Services: []string{"svc1"}, Files: []string{"a/b.log"}}, err: `query: Invalid value: "[a/b.log], [svc1]": cannot specify a file and service`},
		{name: "two files", q: Query{Files: []string{"a/1.log", "a/2.log"}}, err: `query: Invalid value: ["a/1.log","a/2.log"]: cannot specify more than one file`},
		{name: "file with options", q: Query{Files: []string{"a/1.log"}, Options: Options{TailLines: new(3)}}, err: `query: Invalid value: ["a/1.log"]: cannot specify file with options`},
		{name: "file with pattern", q: Query{Files: []string{"a/1.log"}, Options: Options{Pattern: "x"}}, err: `query: Invalid value: ["a/1.log"]: cannot specify file with options`},
		{name: "file", q: Query{Files: []string{"a/1.log"}}},
		{name: "file outside", q: Query{Files: []string{"../etc/passwd"}}, stat: escapes, err: `query: Invalid value: ["../etc/passwd"]: statat ../etc/passwd: path escapes from parent`},
		{name: "since", q: Query{Services: []string{"s"}, Options: Options{SinceTime: &since}}},
		{name: "since until", q: Query{Services: []string{"s"}, Options: Options{SinceTime: &since, UntilTime: &until}}},
		{name: "until before since", q: Query{Services: []string{"s"}, Options: Options{SinceTime: &until, UntilTime: &since}}, err: "untilTime: Invalid value: \"2023-01-04T02:00:00Z\": must be after `sinceTime`"},
		{name: "boot", q: Query{Services: []string{"s"}, Options: Options{Boot: new(-1)}}},
		{name: "boot 1", q: Query{Services: []string{"s"}, Options: Options{Boot: new(1)}}, err: "boot: Invalid value: 1: must be less than 1"},
		{name: "tailLines", q: Query{Services: []string{"s"}, Options: Options{TailLines: new(100000)}}},
		{name: "tailLines over", q: Query{Services: []string{"s"}, Options: Options{TailLines: new(100001)}}, err: "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive"},
		{name: "tailLines negative", q: Query{Services: []string{"s"}, Options: Options{TailLines: new(-1)}}, err: "tailLines: Invalid value: -1: must be between 0 and 100000, inclusive"},
		{name: "pattern", q: Query{Services: []string{"s"}, Options: Options{Pattern: `^foo\d+`}}},
		{name: "bad pattern", q: Query{Services: []string{"s"}, Options: Options{Pattern: `foo\`}}, err: "pattern: Invalid value: \"foo\\\\\": error parsing regexp: trailing backslash at end of expression: ``"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var statted []string
			stat := func(name string) error { statted = append(statted, name); return tt.stat }
			if msg := aggregate(tt.q.Validate(stat)); msg != tt.err {
				t.Errorf("errors %q, want %q", msg, tt.err)
			}
			// Only a lone file with no options is looked up.
			if want := len(tt.q.Files) == 1 && len(tt.q.Services) == 0 && !tt.q.set(); (len(statted) == 1) != want {
				t.Errorf("stat called for %q", statted)
			}
		})
	}
}

func TestJournalArgs(t *testing.T) {
	since := time.Date(2023, 1, 4, 2, 3, 4, 0, time.UTC)
	until := time.Date(2023, 11, 14, 22, 30, 0, 0, time.UTC)
	base := []string{"--utc", "--no-pager", "--output=short-precise"}
	tests := []struct {
		name     string
		q        Query
		services []string
		want     []string
	}{
		{name: "none", want: base},
		{name: "two units", services: []string{"p1", "p2"}, want: append(base[:3:3], "--unit=p1", "--unit=p2")},
		{name: "empty unit skipped", services: []string{"p1", "", "p2"}, want: append(base[:3:3], "--unit=p1", "--unit=p2")},
		{name: "every option", services: []string{"kubelet"},
			q: Query{Options: Options{SinceTime: &since, UntilTime: &until, TailLines: new(5), Boot: new(-1), Pattern: "err.*"}},
			want: append(base[:3:3], "--since=2023-1-4 02:3:4", "--until=2023-11-14 22:30:0", "--pager-end", "--lines=5",
				"--unit=kubelet", "--grep=err.*", "--boot", "-1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JournalArgs(&tt.q, tt.services); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInJournal(t *testing.T) {
	units := "containerd.service\nkubelet.service\nsystemd-journald.service\n"
	for svc, want := range map[string]bool{"kubelet": true, "containerd": true, "journald": true, "docker": false, "kubelet.service": false} {
		if got := InJournal(units, svc); got != want {
			t.Errorf("InJournal(%q) = %t, want %t", svc, got, want)
		}
	}
}

func TestFileCandidates(t *testing.T) {
	want := []string{"foo", "foo.log", "foo/foo.log"}
	if got := FileCandidates("foo"); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

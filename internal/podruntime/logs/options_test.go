package logs

import (
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"
)

func TestOptionsFromQuery(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	i64 := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name, query  string
		splitStreams bool
		want         Options
		status       int
		param, err   string
	}{
		{name: "nothing", query: ""},
		{name: "container is ignored", query: "container=web"},
		{name: "what the API server sends",
			query: "follow=true&previous=true&timestamps=true&tailLines=10&limitBytes=100",
			want:  Options{Follow: true, Previous: true, Timestamps: true, TailLines: i64(10), LimitBytes: 100}},
		{name: "booleans as upstream decodes them", query: "follow=&previous=0&timestamps=False",
			want: Options{Follow: true}},
		{name: "any other value is true", query: "timestamps=yes", want: Options{Timestamps: true}},
		{name: "first value counts", query: "tailLines=3&tailLines=x", want: Options{TailLines: i64(3)}},
		{name: "sinceSeconds", query: "sinceSeconds=30", want: Options{Since: now.Add(-30 * time.Second)}},
		{name: "sinceSeconds beyond a Duration reads everything", query: "sinceSeconds=9223372037"},
		{name: "sinceSeconds at the most a Duration holds", query: "sinceSeconds=9223372036",
			want: Options{Since: now.Add(-9223372036 * time.Second)}},
		{name: "sinceTime", query: "sinceTime=2026-11-30T11:00:00Z", want: Options{Since: now.Add(-time.Hour)}},
		{name: "sinceTime with zone", query: "sinceTime=2026-11-30T12:00:00%2B01:00", want: Options{Since: now.Add(-time.Hour)}},
		{name: "empty sinceTime", query: "sinceTime="},
		{name: "tailLines 0", query: "tailLines=0", want: Options{TailLines: i64(0)}},
		{name: "tail stands for tailLines", query: "tail=5", want: Options{TailLines: i64(5)}},
		{name: "tail overrides tailLines", query: "tailLines=2&tail=5", want: Options{TailLines: i64(5)}},
		{name: "tail=all", query: "tailLines=2&tail=all"},
		{name: "stream All", query: "stream=All", want: Options{Stream: "All"}},
		{name: "stream All with tailLines", query: "stream=All&tailLines=1", want: Options{Stream: "All", TailLines: i64(1)}},
		{name: "stream Stdout", query: "stream=Stdout", splitStreams: true, want: Options{Stream: "Stdout"}},
		{name: "stream Stderr", query: "stream=Stderr", splitStreams: true, want: Options{Stream: "Stderr"}},

		{name: "sinceSeconds negative", query: "sinceSeconds=-3", status: http.StatusUnprocessableEntity,
			param: "sinceSeconds", err: `sinceSeconds: must be greater than 0, got "-3"`},
		{name: "sinceSeconds 0", query: "sinceSeconds=0", status: http.StatusUnprocessableEntity,
			param: "sinceSeconds", err: `sinceSeconds: must be greater than 0, got "0"`},
		{name: "sinceSeconds not a number", query: "sinceSeconds=1m", status: http.StatusBadRequest,
			param: "sinceSeconds", err: `sinceSeconds: not an integer, got "1m"`},
		{name: "sinceTime not RFC3339", query: "sinceTime=2026-11-30", status: http.StatusBadRequest,
			param: "sinceTime", err: `sinceTime: not an RFC3339 time, got "2026-11-30"`},
		{name: "sinceTime and sinceSeconds", query: "sinceTime=2026-11-30T11:00:00Z&sinceSeconds=5", status: http.StatusUnprocessableEntity,
			param: "sinceTime", err: `sinceTime: at most one of sinceTime and sinceSeconds may be given, got sinceTime="2026-11-30T11:00:00Z" and sinceSeconds="5"`},
		{name: "tailLines negative", query: "tailLines=-1", status: http.StatusUnprocessableEntity,
			param: "tailLines", err: `tailLines: must be greater than or equal to 0, got "-1"`},
		{name: "tailLines empty", query: "tailLines=", status: http.StatusBadRequest,
			param: "tailLines", err: `tailLines: not an integer, got ""`},
		{name: "tail not a number", query: "tail=ten", status: http.StatusBadRequest,
			param: "tailLines", err: `tailLines: not an integer, got "ten"`},
		{name: "limitBytes 0", query: "limitBytes=0", status: http.StatusUnprocessableEntity,
			param: "limitBytes", err: `limitBytes: must be greater than 0, got "0"`},
		{name: "limitBytes too big", query: "limitBytes=99999999999999999999", status: http.StatusBadRequest,
			param: "limitBytes", err: `limitBytes: not an integer, got "99999999999999999999"`},
		{name: "stream unknown", query: "stream=stdout", splitStreams: true, status: http.StatusUnprocessableEntity,
			param: "stream", err: `stream: supported values: "All", "Stdout", "Stderr", got "stdout"`},
		{name: "stream with tailLines", query: "stream=Stderr&tailLines=1", splitStreams: true, status: http.StatusUnprocessableEntity,
			param: "stream", err: `stream: cannot be combined with tailLines unless All, got "Stderr"`},
		{name: "stream without the gate", query: "stream=Stdout", status: http.StatusBadRequest,
			param: "stream", err: `stream: only All is served without the PodLogsQuerySplitStreams feature gate, got "Stdout"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := OptionsFromQuery(q, now, tc.splitStreams)
			if tc.err != "" {
				var qe *QueryError
				if !errors.As(err, &qe) || qe.Error() != tc.err || qe.Status != tc.status || qe.Param != tc.param {
					t.Fatalf("OptionsFromQuery(%q) error = %#v, want %d %s %q", tc.query, err, tc.status, tc.param, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("OptionsFromQuery(%q): %v", tc.query, err)
			}
			if !got.Since.Equal(tc.want.Since) {
				t.Errorf("OptionsFromQuery(%q).Since = %v, want %v", tc.query, got.Since, tc.want.Since)
			}
			got.Since, tc.want.Since = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OptionsFromQuery(%q) = %+v, want %+v", tc.query, got, tc.want)
			}
		})
	}
}

func TestOptionsFromQueryLeavesQueryAlone(t *testing.T) {
	q := url.Values{"tail": {"all"}, "tailLines": {"2"}}
	if _, err := OptionsFromQuery(q, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	if len(q["tailLines"]) != 1 {
		t.Errorf("the caller's query was changed: %v", q)
	}
}

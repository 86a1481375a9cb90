package logs

import (
	"testing"
	"time"

	"github.com/actorlet/actorlet/internal/testutil"
)

func TestParseLine(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	for _, tc := range []struct {
		name, line string
		want       entry
		err        string
	}{
		{name: "CRI full", line: "2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
			want: entry{time: ts, stream: "stdout", content: []byte("log content 1"), last: true}},
		{name: "CRI partial", line: "2016-10-06T00:17:09.669794202Z stderr P log content 2\n",
			want: entry{time: ts, stream: "stderr", content: []byte("log content 2")}},
		{name: "CRI without newline", line: "2016-10-06T00:17:09.669794202Z stdout F x",
			want: entry{time: ts, stream: "stdout", content: []byte("x"), last: true}},
		{name: "CRI empty line", line: "2016-10-06T00:17:09.669794202Z stdout F \n",
			want: entry{time: ts, stream: "stdout", content: []byte{}, last: true}},
		{name: "CRI further tags", line: "2016-10-06T00:17:09.669794202Z stdout P:x:y a b\n",
			want: entry{time: ts, stream: "stdout", content: []byte("a b")}},
		{name: "CRI short timestamp and zone", line: "2016-10-06T02:17:09.6697942+02:00 stdout F a\n",
			want: entry{time: ts.Add(-2 * time.Nanosecond), stream: "stdout", content: []byte("a"), last: true}},
		{name: "CRI unknown tag is a full line", line: "2016-10-06T00:17:09.669794202Z stdout X a\n",
			want: entry{time: ts, stream: "stdout", content: []byte("a"), last: true}},
		{name: "CRI bad timestamp", line: "yesterday stdout F a\n", err: `timestamp "yesterday"`},
		{name: "CRI bad stream", line: "2016-10-06T00:17:09.669794202Z stdin F a\n", err: `stream "stdin"`},
		{name: "CRI no tag", line: "2016-10-06T00:17:09.669794202Z stdout\n", err: "no space after the stream"},
		{name: "CRI no content", line: "2016-10-06T00:17:09.669794202Z stdout F\n", err: "no space after the tag"},
		{name: "empty", line: "\n", err: "no space after the timestamp"},
		{name: "JSON full", line: `{"log":"content 1\n","stream":"stdout","time":"2016-10-06T00:17:09.669794202Z"}` + "\n",
			want: entry{time: ts, stream: "stdout", content: []byte("content 1"), last: true}},
		{name: "JSON partial", line: `{"log":"content 2","stream":"stderr","time":"2016-10-06T00:17:09.669794202Z"}`,
			want: entry{time: ts, stream: "stderr", content: []byte("content 2")}},
		{name: "JSON bad stream", line: `{"log":"a\n","stream":"tty","time":"2016-10-06T00:17:09.669794202Z"}`, err: `stream "tty"`},
		{name: "JSON broken", line: `{"log":"a\n",`, err: "not a docker JSON log line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLine([]byte(tc.line))
			if testutil.WantErr(t, err, tc.err) {
				return
			}
			if !got.time.Equal(tc.want.time) || got.stream != tc.want.stream || string(got.content) != string(tc.want.content) || got.last != tc.want.last {
				t.Errorf("parseLine(%q) = %+v, want %+v", tc.line, got, tc.want)
			}
		})
	}
}

package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// FuzzOptionsFromQuery reads container log queries. An error is a
// *QueryError naming a parameter of the query, with status 400 or 422, and
// its message starts with that parameter. Options read from a query make
// a query again (as the API server writes v1.PodLogOptions) that reads
// back to the same options.
func FuzzOptionsFromQuery(f *testing.F) {
	for _, s := range []string{
		"",
		"follow=true&previous=true&timestamps=true&tailLines=10&limitBytes=100",
		"follow=&previous=0&timestamps=False",
		"sinceSeconds=30",
		"sinceTime=2026-11-30T11:00:00Z",
		"sinceTime=2026-11-30T12:00:00.123456789%2B01:00",
		"sinceTime=null",
		"tail=all&tailLines=2",
		"tail=5",
		"stream=Stderr&tailLines=1",
		"stream=Stdout&limitBytes=1",
		"container=web&stream=All",
		"sinceTime=2026-11-30T11:00:00Z&sinceSeconds=5",
		"limitBytes=99999999999999999999",
		"tailLines=-1",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string, splitStreams bool) {
		q, _ := url.ParseQuery(raw) // as r.URL.Query()
		o, err := OptionsFromQuery(q, now, splitStreams)
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("OptionsFromQuery(%q) error %v is not a *QueryError", raw, err)
			}
			if _, given := q[qe.Param]; !given && !(qe.Param == "tailLines" && len(q["tail"]) > 0) {
				t.Errorf("OptionsFromQuery(%q) error %q names %q, which the query does not give", raw, err, qe.Param)
			}
			if !strings.HasPrefix(qe.Error(), qe.Param+": ") {
				t.Errorf("OptionsFromQuery(%q) error %q does not start with its parameter %q", raw, err, qe.Param)
			}
			if qe.Status != http.StatusBadRequest && qe.Status != http.StatusUnprocessableEntity {
				t.Errorf("OptionsFromQuery(%q) error %q has status %d", raw, err, qe.Status)
			}
			return
		}
		if o.TailLines != nil && *o.TailLines < 0 || o.LimitBytes < 0 {
			t.Errorf("OptionsFromQuery(%q) = %+v: a negative count", raw, o)
		}
		switch o.Stream {
		case "", v1.LogStreamAll:
		case v1.LogStreamStdout, v1.LogStreamStderr:
			if !splitStreams || o.TailLines != nil {
				t.Errorf("OptionsFromQuery(%q, split %v) = %+v: stream %s", raw, splitStreams, o, o.Stream)
			}
		default:
			t.Errorf("OptionsFromQuery(%q) = %+v: stream %q", raw, o, o.Stream)
		}
		if _, ok := q["sinceSeconds"]; ok && !o.Since.Before(now) {
			t.Errorf("OptionsFromQuery(%q).Since = %v: not before now (%v)", raw, o.Since, now)
		}

		again := toQuery(o)
		back, err := OptionsFromQuery(again, now.Add(time.Hour), splitStreams)
		if err != nil {
			t.Fatalf("OptionsFromQuery(%q) = %+v, written back as %q: %v", raw, o, again.Encode(), err)
		}
		if !back.Since.Equal(o.Since) {
			t.Errorf("OptionsFromQuery(%q).Since = %v, read back from %q as %v", raw, o.Since, again.Encode(), back.Since)
		}
		back.Since, o.Since = time.Time{}, time.Time{}
		if !reflect.DeepEqual(back, o) {
			t.Errorf("OptionsFromQuery(%q) = %+v, read back from %q as %+v", raw, o, again.Encode(), back)
		}
	})
}

// toQuery writes o as the API server writes v1.PodLogOptions, Since as a
// sinceTime.
func toQuery(o Options) url.Values {
	q := url.Values{}
	for name, on := range map[string]bool{"previous": o.Previous, "follow": o.Follow, "timestamps": o.Timestamps} {
		if on {
			q.Set(name, "true")
		}
	}
	if o.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.LimitBytes != 0 {
		q.Set("limitBytes", strconv.FormatInt(o.LimitBytes, 10))
	}
	if !o.Since.IsZero() {
		q.Set("sinceTime", o.Since.Format(time.RFC3339Nano))
	}
	if o.Stream != "" {
		q.Set("stream", o.Stream)
	}
	return q
}

// FuzzParseLine parses container log lines, CRI and docker JSON. A line
// that parses has a known stream, and the entry written back in the
// line's format parses to the same entry.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
		"2016-10-06T00:17:09.669794202Z stderr P log content 2\n",
		"2016-10-06T00:17:09.669794202Z stdout F x",
		"2016-10-06T00:17:09.669794202Z stdout F \n",
		"2016-10-06T00:17:09.669794202Z stdout P:x:y a b\n",
		"2016-10-06T02:17:09.6697942+02:00 stdout F a\n",
		"2016-10-06T00:17:09,669Z stdout F comma\n",
		"2026-12-01T19:00:00Z stderr F \x00\xff tab\there\n",
		"yesterday stdout F a\n",
		"2016-10-06T00:17:09.669794202Z stdin F a\n",
		"2016-10-06T00:17:09.669794202Z stdout\n",
		"\n",
		`{"log":"content 1\n","stream":"stdout","time":"2016-10-06T00:17:09.669794202Z"}` + "\n",
		`{"log":"content 2","stream":"stderr","time":"2016-10-06T00:17:09.669794202+02:00"}`,
		`{"log":"\u00e9\ud800","stream":"stdout"}`,
		`{"log":"a\n","stream":"tty","time":"2016-10-06T00:17:09.669794202Z"}`,
		`{"log":"a\n",`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseLine(line)
		if err != nil {
			return
		}
		if e.stream != streamStdout && e.stream != streamStderr {
			t.Fatalf("parseLine(%q) stream %q", line, e.stream)
		}
		var again []byte
		if line[0] == '{' {
			content := string(e.content)
			if e.last {
				content += "\n"
			}
			again, err = json.Marshal(jsonLine{Log: content, Stream: e.stream, Time: e.time})
			if err != nil {
				t.Fatalf("parseLine(%q) = %+v, which does not write back as JSON: %v", line, e, err)
			}
		} else {
			tag := "F"
			if !e.last {
				tag = "P"
			}
			again = []byte(e.time.Format(time.RFC3339Nano) + " " + e.stream + " " + tag + " " + string(e.content))
		}
		again = append(again, '\n')
		back, err := parseLine(again)
		if err != nil {
			t.Fatalf("parseLine(%q) = %+v, written back as %q: %v", line, e, again, err)
		}
		if !back.time.Equal(e.time) || back.stream != e.stream || back.last != e.last || !bytes.Equal(back.content, e.content) {
			t.Errorf("parseLine(%q) = %+v, written back as %q, parses as %+v", line, e, again, back)
		}
	})
}

// FuzzRead reads a whole log file, as /containerLogs/ without follow.
// Whatever the file holds: reading never fails; limitBytes cuts the
// output of the unlimited read; a stream read alone is that stream of the
// read of both; and a tail is the end of the whole output (of a log whose
// last line is complete), with at most as many lines as asked.
func FuzzRead(f *testing.F) {
	t0 := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	line := func(ms int, stream, tag, content string) string {
		return t0.Add(time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano) + " " + stream + " " + tag + " " + content + "\n"
	}
	for _, s := range []string{
		line(0, "stdout", "F", "one") + line(1, "stderr", "F", "err one") + line(2, "stdout", "P", "tw") +
			line(3, "stdout", "P", "o-") + line(4, "stdout", "F", "two") + line(5, "stderr", "F", "err two") + line(6, "stdout", "F", ""),
		line(0, "stdout", "P", "a1") + line(1, "stderr", "P", "b1") + line(2, "stdout", "F", "a2") + line(3, "stderr", "F", "b2"),
		line(0, "stdout", "F", "complete") + "2016-10-06T00:17:09.669794202Z stdout F being written",
		line(0, "stdout", "F", "a") + "garbage\n" + line(1, "stderr", "F", "b") + "\n",
		`{"log":"json 1\n","stream":"stdout","time":"2016-10-06T00:17:09.669794202Z"}` + "\n" +
			`{"log":"json ","stream":"stderr","time":"2016-10-06T00:17:09.669794202Z"}` + "\n" +
			`{"log":"2\n","stream":"stderr","time":"2016-10-06T00:17:09.669794202Z"}` + "\n",
		"",
	} {
		f.Add([]byte(s), uint8(1), uint16(10))
		f.Add([]byte(s), uint8(3), uint16(1))
	}
	f.Fuzz(func(t *testing.T, content []byte, tail uint8, limit uint16) {
		path := filepath.Join(t.TempDir(), "0.log")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		read := func(o Options, stdout, stderr io.Writer) {
			t.Helper()
			if err := Read(context.Background(), path, o, stdout, stderr, nil); err != nil {
				t.Fatalf("Read(%q, %+v): %v", content, o, err)
			}
		}
		var all, out, errs bytes.Buffer
		read(Options{}, &all, &all)
		read(Options{}, &out, &errs)

		var limited bytes.Buffer
		if limit > 0 {
			read(Options{LimitBytes: int64(limit)}, &limited, &limited)
			if want := all.Bytes()[:min(all.Len(), int(limit))]; !bytes.Equal(limited.Bytes(), want) {
				t.Errorf("Read(%q, limitBytes %d) = %q, want %q", content, limit, limited.Bytes(), want)
			}
		}

		for _, s := range []struct {
			stream string
			want   []byte
		}{{v1.LogStreamStdout, out.Bytes()}, {v1.LogStreamStderr, errs.Bytes()}} {
			var got, other bytes.Buffer
			if s.stream == v1.LogStreamStdout {
				read(Options{Stream: s.stream}, &got, &other)
			} else {
				read(Options{Stream: s.stream}, &other, &got)
			}
			if !bytes.Equal(got.Bytes(), s.want) || other.Len() > 0 {
				t.Errorf("Read(%q, stream %s) = %q (and %q), want %q", content, s.stream, got.Bytes(), other.Bytes(), s.want)
			}
		}

		n := int64(tail)
		var tailed bytes.Buffer
		read(Options{TailLines: &n}, &tailed, &tailed)
		// A tail leaves out a last line still being written (no newline),
		// as upstream, where the whole read ends it.
		complete := len(content) == 0 || content[len(content)-1] == '\n'
		if complete && !bytes.HasSuffix(all.Bytes(), tailed.Bytes()) {
			t.Errorf("Read(%q, tailLines %d) = %q, not the end of the whole output %q", content, n, tailed.Bytes(), all.Bytes())
		}
		// A docker JSON line's log may hold newlines of its own (docker
		// never writes one but the last): then output lines are not log lines.
		embedded := false
		for _, l := range bytes.SplitAfter(content, []byte{'\n'}) {
			if e, err := parseLine(l); err == nil && bytes.IndexByte(e.content, '\n') >= 0 {
				embedded = true
			}
		}
		if lines := int64(bytes.Count(tailed.Bytes(), []byte{'\n'})); lines > n && !embedded {
			t.Errorf("Read(%q, tailLines %d) = %q: %d lines", content, n, tailed.Bytes(), lines)
		}
	})
}

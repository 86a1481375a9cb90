package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The two streams a container log holds, as the runtime names them.
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
)

// entry is one physical line of a container log file: a whole line, or one
// fragment of a line the runtime split because it was too long.
type entry struct {
	time    time.Time
	stream  string
	content []byte // without the line's newline
	// last is false for a fragment that the next one of the same stream
	// continues (CRI tag P; a docker JSON log without its final newline).
	last bool
}

// parseLine parses one physical line, with or without its newline, in the
// CRI format or in the older docker JSON format. A log file holds only one
// of them; the first byte tells them apart (a CRI line starts with a
// timestamp). content may share memory with line.
func parseLine(line []byte) (entry, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if len(line) > 0 && line[0] == '{' {
		return parseJSON(line)
	}
	return parseCRI(line)
}

// parseCRI parses `<RFC3339Nano timestamp> <stdout|stderr> <P|F>[:tags] <content>`
// (cri-api's LogTag: further ':'-separated tags are allowed and ignored).
func parseCRI(line []byte) (entry, error) {
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return entry{}, errors.New("no space after the timestamp")
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return entry{}, fmt.Errorf("timestamp %q is not RFC3339: %w", ts, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return entry{}, errors.New("no space after the stream")
	}
	if s := string(stream); s != streamStdout && s != streamStderr {
		return entry{}, fmt.Errorf("stream %q is neither %s nor %s", stream, streamStdout, streamStderr)
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return entry{}, errors.New("no space after the tag")
	}
	tag, _, _ := bytes.Cut(tags, []byte{':'})
	return entry{time: t, stream: string(stream), content: content, last: string(tag) != "P"}, nil
}

// jsonLine is one line of docker's json-file log driver.
type jsonLine struct {
	Log    string    `json:"log"`
	Stream string    `json:"stream"`
	Time   time.Time `json:"time"`
}

// parseJSON parses `{"log":"content\n","stream":"stdout","time":"..."}`.
func parseJSON(line []byte) (entry, error) {
	var l jsonLine
	if err := json.Unmarshal(line, &l); err != nil {
		return entry{}, fmt.Errorf("not a docker JSON log line: %w", err)
	}
	if l.Stream != streamStdout && l.Stream != streamStderr {
		return entry{}, fmt.Errorf("stream %q is neither %s nor %s", l.Stream, streamStdout, streamStderr)
	}
	content, last := strings.CutSuffix(l.Log, "\n")
	return entry{time: l.Time, stream: l.Stream, content: []byte(content), last: last}, nil
}

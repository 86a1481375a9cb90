package logs

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
)

// timestampFormat is upstream's fixed-width RFC3339Nano for the timestamps
// option, so that prefixed lines align.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// output writes log entries to the response as the options ask: the
// fragments of a line joined, lines before Since skipped, timestamps
// prefixed, at most LimitBytes written.
type output struct {
	stdout, stderr io.Writer // nil: that stream is not wanted
	timestamps     bool
	since          time.Time
	remain         int64 // bytes still allowed
	// Per stream (0 stdout, 1 stderr), because the runtime splits each
	// stream's lines on its own and the two can interleave.
	lines   [2]lineState
	buf     []byte
	written bool // since the last flush
}

// lineState is how far a stream is into a logical line.
type lineState struct {
	open bool // a fragment of the line was seen and the line is not ended
	skip bool // the line started before since
}

func newOutput(stdout, stderr io.Writer, opts Options) *output {
	o := &output{stdout: stdout, stderr: stderr, timestamps: opts.Timestamps, since: opts.Since, remain: math.MaxInt64}
	if opts.LimitBytes > 0 {
		o.remain = opts.LimitBytes
	}
	return o
}

// write writes e and reports whether the byte limit is reached. A line is
// kept or skipped as a whole by the timestamp of its first fragment, the one
// prefixed with the timestamps option (upstream prefixes the first fragment
// only too, but filters each fragment by its own timestamp, which can cut a
// line in two).
func (o *output) write(e entry) (full bool, err error) {
	w, st := o.stdout, &o.lines[0]
	if e.stream == streamStderr {
		w, st = o.stderr, &o.lines[1]
	}
	starts := !st.open
	if starts {
		st.skip = e.time.Before(o.since)
	}
	st.open = !e.last
	if st.skip || w == nil {
		return false, nil
	}
	b := o.buf[:0]
	if o.timestamps && starts {
		b = e.time.AppendFormat(b, timestampFormat)
		b = append(b, ' ')
	}
	b = append(b, e.content...)
	if e.last {
		b = append(b, '\n')
	}
	o.buf = b
	if int64(len(b)) > o.remain {
		b = b[:o.remain]
	}
	n, err := w.Write(b)
	o.remain -= int64(n)
	o.written = o.written || n > 0
	if err != nil {
		return false, fmt.Errorf("write log line: %w", err)
	}
	if n < len(b) {
		return false, fmt.Errorf("write log line: %w", io.ErrShortWrite)
	}
	return o.remain <= 0, nil
}

// flush pushes what was written to the client when a writer buffers (an
// http.ResponseWriter): it is called whenever the reader has caught up with
// the log, so a follower sees each line as soon as it is read, while a
// long read is not cut into one chunk per line.
func (o *output) flush() {
	if !o.written {
		return
	}
	o.written = false
	if f, ok := o.stdout.(http.Flusher); ok {
		f.Flush()
	}
	// When both are the same writer the second flush finds nothing to send.
	if f, ok := o.stderr.(http.Flusher); ok {
		f.Flush()
	}
}

package logs

import (
	"bytes"
	"fmt"
	"io"
)

const (
	// tailBlock is how much of the file tailStart reads at a time, backwards.
	tailBlock = 32 << 10
	// headSize is enough of a CRI line to read its tag.
	headSize = 128
	// maxJSONLine bounds what tailStart reads of one docker JSON line to
	// find whether it ends a line; docker splits lines at 16 KiB.
	maxJSONLine = 1 << 20
)

// tailStart is the offset of the first of the last n lines of the log f of
// size bytes, reading it backwards from the end, so that a tail of a large
// log reads little more than the lines it returns.
//
// Lines are logical lines: a line the runtime split into fragments counts
// once, and its fragments are all returned (upstream counts fragments, so a
// long last line comes back cut). Fragments at the end of the log that no
// final fragment ends yet count as one line; an incomplete physical line at
// the very end is not counted, as upstream.
func tailStart(f io.ReaderAt, size, n int64) (int64, error) {
	var (
		buf      = make([]byte, tailBlock)
		bufStart = size // buf[:bufLen] holds the file from bufStart
		bufLen   = 0
		lineEnd  = int64(-1) // end (after its newline) of the line being delimited; -1 until the last newline is found
		count    int64
	)
	// ends reports whether the physical line [start, end) ends a logical
	// line; a line that does not parse counts as a line of its own.
	ends := func(start, end int64) (bool, error) {
		line, err := readLine(f, buf[:bufLen], bufStart, start, end)
		if err != nil {
			return false, err
		}
		e, err := parseLine(line)
		return err != nil || e.last, nil
	}
	// closes handles the complete line [start, lineEnd): done when it is the
	// end of the line before the n wanted.
	closes := func(start int64) (done bool, err error) {
		// The last complete line ends the last logical line, whatever its tag.
		last := count == 0
		if !last {
			if last, err = ends(start, lineEnd); err != nil {
				return false, err
			}
		}
		if last {
			if count == n {
				return true, nil
			}
			count++
		}
		lineEnd = start
		return false, nil
	}
	for bufStart > 0 {
		next := max(bufStart-tailBlock, 0)
		bufLen = int(bufStart - next)
		bufStart = next
		if _, err := f.ReadAt(buf[:bufLen], bufStart); err != nil && err != io.EOF {
			return 0, fmt.Errorf("read at %d: %w", bufStart, err)
		}
		for i := bufLen; ; {
			j := bytes.LastIndexByte(buf[:i], '\n')
			if j < 0 {
				break
			}
			i = j
			nl := bufStart + int64(j)
			if lineEnd < 0 {
				lineEnd = nl + 1
				continue
			}
			done, err := closes(nl + 1)
			if err != nil {
				return 0, err
			}
			if done {
				return lineEnd, nil
			}
		}
	}
	if lineEnd > 0 {
		done, err := closes(0)
		if err != nil {
			return 0, err
		}
		if done {
			return lineEnd, nil
		}
	}
	return 0, nil
}

// readLine is the physical line [start, end) of f, from buf (the file from
// bufStart) when it is there: a CRI line's head only, a docker JSON line
// whole.
func readLine(f io.ReaderAt, buf []byte, bufStart, start, end int64) ([]byte, error) {
	length := end - start
	head := min(length, headSize)
	var b []byte
	if start >= bufStart && start+head <= bufStart+int64(len(buf)) {
		b = buf[start-bufStart : start-bufStart+head]
	} else {
		var err error
		if b, err = readAt(f, start, head); err != nil {
			return nil, err
		}
	}
	if len(b) == 0 || b[0] != '{' || int64(len(b)) == length {
		return b, nil
	}
	return readAt(f, start, min(length, maxJSONLine))
}

func readAt(f io.ReaderAt, off, n int64) ([]byte, error) {
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read line at %d: %w", off, err)
	}
	return b, nil
}

package logs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// wantTailStart is tailStart the slow way: every line parsed from the start.
func wantTailStart(log []byte, n int64) int64 { return wantTailStarts(log)(n) }

func wantTailStarts(log []byte) func(n int64) int64 {
	var starts []int64 // of the logical lines
	var end int64      // of the last complete physical line
	lineEnded := true
	for off := int64(0); ; {
		i := bytes.IndexByte(log[off:], '\n')
		if i < 0 {
			break
		}
		if lineEnded {
			starts = append(starts, off)
		}
		e, err := parseLine(log[off : off+int64(i)+1])
		lineEnded = err != nil || e.last
		off += int64(i) + 1
		end = off
	}
	return func(n int64) int64 {
		switch {
		case n == 0:
			return end
		case n >= int64(len(starts)):
			return 0
		default:
			return starts[int64(len(starts))-n]
		}
	}
}

// randomLog is a log of lines and fragments, a few of them longer than
// tailBlock, malformed lines, and maybe an incomplete last line.
func randomLog(rnd *rand.Rand, lines int) []byte {
	var b strings.Builder
	for i := range lines {
		switch r := rnd.IntN(10); {
		case r == 0:
			b.WriteString("not a log line\n")
		case r == 1:
			b.WriteString(cri(at(i), "stdout", "P", strings.Repeat("p", tailBlock+rnd.IntN(tailBlock))))
		case r < 5:
			b.WriteString(cri(at(i), "stdout", "P", strings.Repeat("p", rnd.IntN(200))))
		default:
			b.WriteString(cri(at(i), "stderr", "F", strings.Repeat("f", rnd.IntN(200))))
		}
	}
	if rnd.IntN(2) == 0 {
		b.WriteString(strings.TrimSuffix(cri(at(lines), "stdout", "F", "incomplete"), "\n"))
	}
	return []byte(b.String())
}

func TestTailStartMatchesForwardParse(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		lines := rnd.IntN(40)
		log := randomLog(rnd, lines)
		want := wantTailStarts(log)
		for n := range int64(lines + 2) {
			got, err := tailStart(bytes.NewReader(log), int64(len(log)), n)
			if want := want(n); err != nil || got != want {
				t.Fatalf("round %d: tailStart(%d bytes, %d) = %d, %v, want %d", round, len(log), n, got, err, want)
			}
		}
	}
}

func TestTailStartJSON(t *testing.T) {
	long := strings.Repeat("x", tailBlock)
	log := []byte(`{"log":"a\n","stream":"stdout","time":"2026-11-30T10:00:00Z"}` + "\n" +
		`{"log":"` + long + `","stream":"stdout","time":"2026-11-30T10:00:00Z"}` + "\n" +
		`{"log":"b\n","stream":"stdout","time":"2026-11-30T10:00:00Z"}` + "\n" +
		`{"log":"c\n","stream":"stdout","time":"2026-11-30T10:00:00Z"}` + "\n")
	for n := int64(0); n < 5; n++ {
		got, err := tailStart(bytes.NewReader(log), int64(len(log)), n)
		if want := wantTailStart(log, n); err != nil || got != want {
			t.Errorf("tailStart(%d) = %d, %v, want %d", n, got, err, want)
		}
	}
}

// countingReader counts what tailStart reads.
type countingReader struct {
	r    *bytes.Reader
	read int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.read += int64(n)
	return n, err
}

func TestTailOfALargeLog(t *testing.T) {
	var b strings.Builder
	for i := range 20000 { // 1 MB
		b.WriteString(cri(at(i), "stdout", "F", fmt.Sprintf("line %05d", i)))
	}
	log := []byte(b.String())
	for _, tc := range []struct {
		n, maxRead int64
	}{
		{n: 0, maxRead: tailBlock},
		{n: 10, maxRead: tailBlock},
		{n: 3000, maxRead: 3000*60 + 2*tailBlock},
		{n: 30000, maxRead: int64(len(log)) + (int64(len(log))/tailBlock+1)*headSize},
	} {
		r := &countingReader{r: bytes.NewReader(log)}
		got, err := tailStart(r, int64(len(log)), tc.n)
		if want := wantTailStart(log, tc.n); err != nil || got != want {
			t.Errorf("tailStart(%d) = %d, %v, want %d", tc.n, got, err, want)
		}
		if r.read > tc.maxRead {
			t.Errorf("tailStart(%d) read %d bytes, want at most %d", tc.n, r.read, tc.maxRead)
		}
	}

	path := writeLog(t, b.String())
	tail := int64(3)
	var out bytes.Buffer
	if err := Read(context.Background(), path, Options{TailLines: &tail}, &out, &out, nil); err != nil {
		t.Fatal(err)
	}
	if want := "line 19997\nline 19998\nline 19999\n"; out.String() != want {
		t.Errorf("tail 3 of a large log = %q, want %q", out.String(), want)
	}
}

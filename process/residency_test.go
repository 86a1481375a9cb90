package process

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	const exe = "/usr/bin/actorlet"
	maps := `00400000-01a00000 r-xp 00000000 08:01 123 /usr/bin/actorlet
01a00000-03000000 r--p 01600000 08:01 123 /usr/bin/actorlet
03000000-03100000 rw-p 02c00000 08:01 123 /usr/bin/actorlet
03100000-05000000 rw-p 00000000 00:00 0
7f0000000000-7f0000100000 r-xp 00000000 08:01 456 /usr/lib/libc.so.6
7f0000200000-7f0000300000 r--s 00000000 08:01 123 /usr/bin/actorlet
garbage line
`
	got, err := parseMaps(bufio.NewScanner(strings.NewReader(maps)), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []binaryMapping{{0x400000, 0x1a00000, 0, true}, {0x1a00000, 0x3000000, 0x1600000, false}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parseMaps = %+v, want %+v (the private read-only mappings of the executable only)", got, want)
	}
}

func TestAdviceOnOwnBinary(t *testing.T) {
	// The test binary's own mappings: both calls must succeed, and the
	// process must go on running code from the dropped pages.
	if err := AdviseRandomAccess(); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseStartupPages(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Repeat("ok", 2); got != "okok" {
		t.Fatal(got)
	}
}

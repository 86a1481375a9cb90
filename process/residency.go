// Package process holds what actorlet does to its own process: today, how
// much of its executable stays resident.
package process

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Most of an idle actorlet's resident memory would be its executable, not
// its heap: the kernel maps the file's pages as code touches them, and
// start-up (package initialisation, the API scheme's registration of every
// type) touches much code that never runs again. Dropping the read-only
// mappings once start-up is done lets only the pages the running agent uses
// come back, from the page cache, without I/O. They come back 64 KiB at a
// time: the kernel's fault-around maps a faulting page's cached neighbours
// whatever the advice (MADV_RANDOM only stops read-ahead). Dropping the
// executable's page cache as well would make those faults single pages, but
// measured 10-15 % more CPU per pod in make bench (each fault then reads
// the disk), so the cache stays. The writable mappings (data, bss) are
// never touched: dropping them would lose state.

// binaryMapping is one read-only mapping of the executable.
type binaryMapping struct {
	start, end uintptr
}

// readOnlyMappings lists the executable's mappings without write
// permission, from /proc/self/maps.
func readOnlyMappings() ([]binaryMapping, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMaps(bufio.NewScanner(f), exe)
}

// parseMaps reads /proc/PID/maps lines: "start-end perms offset dev inode path".
func parseMaps(sc *bufio.Scanner, exe string) ([]binaryMapping, error) {
	var out []binaryMapping
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || len(fields[1]) < 4 || fields[1][1] == 'w' || fields[1][3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, binaryMapping{start: uintptr(start), end: uintptr(end)})
	}
	return out, sc.Err()
}

func advise(advice int) error {
	maps, err := readOnlyMappings()
	if err != nil {
		return err
	}
	for _, m := range maps {
		// The raw call: the range is an address from /proc/self/maps, not
		// memory Go allocated, so it is never turned into a Go pointer.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); errno != 0 {
			return fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, errno)
		}
	}
	return nil
}

// AdviseRandomAccess turns read-ahead off for the executable's read-only
// mappings, so that a fault of a page that is not cached reads that page
// alone.
func AdviseRandomAccess() error { return advise(unix.MADV_RANDOM) }

// ReleaseStartupPages drops the executable's read-only pages from the
// process's resident set; those still in use fault back in from the page
// cache. Call it once start-up is done.
func ReleaseStartupPages() error { return advise(unix.MADV_DONTNEED) }

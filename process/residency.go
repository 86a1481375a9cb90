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

// Most of an idle actorlet's resident memory is its executable, not its
// heap: the kernel maps the file's pages as code touches them, and start-up
// (package initialisation, the API scheme's registration of every type)
// touches much code that never runs again. Dropping the read-only mappings
// once start-up is done lets only the pages the running agent uses come
// back. They would come back 64 KiB at a time: the kernel's fault-around
// maps the neighbours of a faulting page that are in the page cache, and
// MADV_RANDOM does not stop that (it stops read-ahead; measured on this
// project's 6.x kernels). So the page cache of the executable's read-only
// data (types, pclntab) is dropped too: a fault there then reads one page.
// Code keeps its page cache: the kernel reads ahead around a code fault
// whatever the advice, and with nothing cached each fault read megabytes
// (0.033 CPU-s per pod against 0.020 at N = 10 in make bench). Dropping the
// data's cache took the peak RSS at N = 110 from 57-60 to 47-50 MiB.
// The writable mappings (data, bss) are never touched: dropping them would
// lose state.

// binaryMapping is one read-only mapping of the executable: its addresses,
// where it starts in the file, and whether it is code.
type binaryMapping struct {
	start, end uintptr
	offset     int64
	exec       bool
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
		offset, err3 := strconv.ParseInt(fields[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || end <= start {
			continue
		}
		out = append(out, binaryMapping{start: uintptr(start), end: uintptr(end), offset: offset, exec: fields[1][2] == 'x'})
	}
	return out, sc.Err()
}

func advise(advice int) error {
	maps, err := readOnlyMappings()
	if err != nil {
		return err
	}
	return adviseMappings(maps, advice)
}

func adviseMappings(maps []binaryMapping, advice int) error {
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
// mappings, so that a fault of a page not in the page cache reads that page
// alone (the kernel still reads ahead for code).
func AdviseRandomAccess() error { return advise(unix.MADV_RANDOM) }

// ReleaseStartupPages drops the executable's read-only pages from the
// process's resident set, and the page cache of its read-only data that no
// process maps; pages still in use fault back in. Call it once start-up is
// done.
func ReleaseStartupPages() error {
	maps, err := readOnlyMappings()
	if err != nil {
		return err
	}
	if err := adviseMappings(maps, unix.MADV_DONTNEED); err != nil {
		return err
	}
	return dropDataPageCache(maps)
}

// dropDataPageCache asks the kernel to drop the cached pages of the
// executable's read-only data mappings; pages another process maps stay.
func dropDataPageCache(maps []binaryMapping) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the executable: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, m := range maps {
		if m.exec {
			continue
		}
		if err := unix.Fadvise(int(f.Fd()), m.offset, int64(m.end-m.start), unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("drop the page cache of %s at %#x: %w", exe, m.offset, err)
		}
	}
	return nil
}

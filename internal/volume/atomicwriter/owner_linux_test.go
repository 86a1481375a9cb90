package atomicwriter

import (
	"os"
	"syscall"
)

func ownerUID(info os.FileInfo) uint32 {
	return info.Sys().(*syscall.Stat_t).Uid
}

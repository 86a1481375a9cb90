package stats

import (
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/podruntime/logs"
)

// containerRootfs is the container's writable layer: its usage from CRI,
// the size of its filesystem from statfs of the mountpoint CRI names
// (cached per request in fsByMountpoint; left out when unreadable).
func (p *Provider) containerRootfs(st *runtimeapi.ContainerStats, fsByMountpoint map[string]*fsInfo, now time.Time) *statsapi.FsStats {
	wl := st.GetWritableLayer()
	if wl == nil {
		return nil
	}
	s := &statsapi.FsStats{}
	if mp := wl.GetFsId().GetMountpoint(); mp != "" {
		info, seen := fsByMountpoint[mp]
		if !seen {
			if i, err := statFS(mp); err == nil {
				info = &i
			} else {
				p.Log.Debug().Err(err).Msg("writable layer filesystem size left out")
			}
			fsByMountpoint[mp] = info
		}
		if info != nil {
			s = info.capacityStats()
		}
	}
	s.Time = metaTime(criTime(wl.GetTimestamp(), now))
	s.UsedBytes = criValue(wl.GetUsedBytes())
	s.InodesUsed = criValue(wl.GetInodesUsed())
	return s
}

// containerLogs is the usage of the container's log directory on the
// node's filesystem; nil when it has none (yet).
func (p *Provider) containerLogs(ref statsapi.PodReference, container string, nodeFs fsInfo, now time.Time) *statsapi.FsStats {
	dir := filepath.Join(p.podLogsDir(ref), container)
	used, inodes, err := fileUsage(dir)
	if err != nil {
		p.Log.Debug().Err(err).Str("dir", dir).Msg("container log usage left out")
		return nil
	}
	s := nodeFs.capacityStats()
	s.Time = metaTime(now)
	addUsage(s, used, inodes)
	return s
}

func (p *Provider) podLogsDir(ref statsapi.PodReference) string {
	return logs.PodLogsDir(p.PodLogsDir, ref.Namespace, ref.Name, types.UID(ref.UID))
}

// podEphemeralStorage is what the pod uses of the node's filesystem and
// the image filesystem, as upstream's calcEphemeralStorage: its
// containers' writable layers and logs, its ephemeral volumes (an
// emptyDir on disk, a configMap volume: upstream's
// IsLocalEphemeralVolume), the files of its log directory and its
// etc-hosts file.
func (p *Provider) podEphemeralStorage(ps *statsapi.PodStats, vols []podVolume, nodeFs fsInfo, now time.Time) *statsapi.FsStats {
	s := nodeFs.capacityStats()
	s.Time = metaTime(now)
	for _, c := range ps.Containers {
		if c.Rootfs == nil {
			continue
		}
		addUsage(s, deref(c.Rootfs.UsedBytes), deref(c.Rootfs.InodesUsed))
		if c.Logs != nil {
			addUsage(s, deref(c.Logs.UsedBytes), deref(c.Logs.InodesUsed))
		}
	}
	for _, v := range vols {
		if v.ephemeral {
			addUsage(s, deref(v.stats.UsedBytes), deref(v.stats.InodesUsed))
		}
	}
	if used, inodes, err := fileUsage(p.podLogsDir(ps.PodRef)); err == nil {
		addUsage(s, used, inodes)
	}
	if p.RootDir != "" {
		if used, err := diskUsage(filepath.Join(p.RootDir, "pods", ps.PodRef.UID, "etc-hosts")); err == nil {
			addUsage(s, used, 1)
		}
	}
	return s
}

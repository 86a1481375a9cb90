package userns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// KubeletUser is the user whose subordinate IDs are the kubelet's range,
// upstream's kubeletUser.
const KubeletUser = "kubelet"

// The files of the subordinate IDs, as shadow-utils keeps them.
const (
	SubUIDFile = "/etc/subuid"
	SubGIDFile = "/etc/subgid"
)

// IDRange is a range of host IDs: length IDs from First.
type IDRange struct{ First, Length uint32 }

// DefaultRange is the kubelet's range when no subordinate IDs are
// configured for it, upstream's: every ID from idsPerPod up, so that no pod
// maps the host's first IDs, root's among them.
func DefaultRange(idsPerPod uint32) IDRange {
	return IDRange{First: idsPerPod, Length: uint32((1 << 32) - uint64(idsPerPod))}
}

// KubeletRange is upstream's getKubeletMappings: without a user named
// "kubelet", the default range; with one, the single range that both
// /etc/subuid and /etc/subgid give it, which must be the same. Upstream
// asks shadow-utils' getsubids, which reads these files (or a remote
// source actorlet does not reach); without the files, as upstream without
// getsubids, the default range.
func KubeletRange(idsPerPod uint32) (IDRange, error) {
	u, err := user.Lookup(KubeletUser)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return DefaultRange(idsPerPod), nil
		}
		return IDRange{}, err
	}
	subuid, uerr := os.ReadFile(SubUIDFile)
	subgid, gerr := os.ReadFile(SubGIDFile)
	switch {
	case os.IsNotExist(uerr) && os.IsNotExist(gerr):
		return DefaultRange(idsPerPod), nil
	case uerr != nil && !os.IsNotExist(uerr):
		return IDRange{}, fmt.Errorf("error retrieving additional uids for user %q: %w", KubeletUser, uerr)
	case gerr != nil && !os.IsNotExist(gerr):
		return IDRange{}, fmt.Errorf("error retrieving additional gids for user %q: %w", KubeletUser, gerr)
	}
	return SubIDRange(u.Username, u.Uid, subuid, subgid)
}

// SubIDRange is the kubelet's range from the content of /etc/subuid and
// /etc/subgid (nil for a file that is not there), for the user of that name
// and numeric ID, with upstream's checks and messages: each file must give
// it something, the same ranges, and one range only.
func SubIDRange(name, uid string, subuid, subgid []byte) (IDRange, error) {
	uids, err := subIDRanges(subuid, name, uid)
	if err != nil || len(uids) == 0 {
		return IDRange{}, fmt.Errorf("error retrieving additional uids for user %q: %w", KubeletUser, errOrNone(err))
	}
	gids, err := subIDRanges(subgid, name, uid)
	if err != nil || len(gids) == 0 {
		return IDRange{}, fmt.Errorf("error retrieving additional gids for user %q", KubeletUser)
	}
	if !slices.Equal(uids, gids) {
		return IDRange{}, fmt.Errorf("mismatched subuids and subgids for user %q", KubeletUser)
	}
	if len(uids) != 1 {
		return IDRange{}, fmt.Errorf("error parsing the subordinate IDs of user %q: it must have only one range, it has %d", KubeletUser, len(uids))
	}
	return uids[0], nil
}

func errOrNone(err error) error {
	if err != nil {
		return err
	}
	return errors.New("no subordinate IDs")
}

// subIDRanges are the ranges of a subuid or subgid file (lines of
// OWNER:FIRST:COUNT) whose owner is the user's name or numeric ID.
func subIDRanges(content []byte, name, uid string) ([]IDRange, error) {
	var out []IDRange
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if parts[0] != name && parts[0] != uid {
			continue
		}
		if len(parts) != 3 {
			return nil, fmt.Errorf("invalid line %q", line)
		}
		first, err := strconv.ParseUint(parts[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("error parsing line %q: %w", line, err)
		}
		count, err := strconv.ParseUint(parts[2], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("error parsing line %q: %w", line, err)
		}
		out = append(out, IDRange{First: uint32(first), Length: uint32(count)})
	}
	return out, sc.Err()
}

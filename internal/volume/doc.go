// Package volume sets up and tears down a pod's volumes on the host, in
// upstream's on-disk layout (ROOT/pods/UID/volumes/kubernetes.io~TYPE/NAME),
// so that upstream's tools, and an upstream kubelet started later on the
// same node, understand what it finds there.
//
// It holds the mechanics only: what a volume of each type needs on disk,
// and the mounts that make it. The volume-manager actor
// (actors/volumemanager) decides when each pod's volumes are set up,
// refreshed and torn down, and runs this package's calls off its mailbox.
//
// Every SetUp is idempotent: called again for a volume already set up (a
// refresh of its content, or a restarted actorlet finding it), it reuses
// what is there (a tmpfs already mounted is not mounted over) and only
// brings the content up to date.
package volume

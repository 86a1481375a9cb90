// Package podruntime is actorlet's CRI edge for one pod: it observes a pod in
// the container runtime (GetPodStatus, ListPods), decides what a sync pass
// must do (ComputePodActions), performs it (SyncPod, KillPod) and turns what
// it observed into the pod's API status (GenerateAPIStatus), following the
// upstream kubelet's kuberuntime package.
//
// The functions that call the runtime block; the pod worker calls them from
// a goroutine and receives the results as messages, never blocking its
// mailbox. Everything that decides without calling the runtime is a pure
// function so it can be tested without one.
package podruntime

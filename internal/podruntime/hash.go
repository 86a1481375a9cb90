package podruntime

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
)

// hashedContainer holds the container fields whose change needs a new
// container instance. Resources are left out: they may change in place.
// The ImagePullPolicy, probes and lifecycle are left out too: changing them
// does not change what runs.
type hashedContainer struct {
	Name            string
	Image           string
	Command, Args   []string
	WorkingDir      string
	Ports           []v1.ContainerPort
	Env             []v1.EnvVar
	EnvFrom         []v1.EnvFromSource
	VolumeMounts    []v1.VolumeMount
	SecurityContext *v1.SecurityContext
	Stdin           bool
	StdinOnce       bool
	TTY             bool
}

// HashContainer hashes the parts of the container spec that require a
// restart when they change (image, command, args, env, ports, ...). It is
// stored in the io.kubernetes.container.hash annotation; the values are
// ours, not upstream's, only the key is shared.
func HashContainer(c *v1.Container) uint64 {
	raw, err := json.Marshal(hashedContainer{
		Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args, WorkingDir: c.WorkingDir,
		Ports: c.Ports, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts,
		SecurityContext: c.SecurityContext, Stdin: c.Stdin, StdinOnce: c.StdinOnce, TTY: c.TTY,
	})
	if err != nil {
		// The fields are plain data: Marshal cannot fail on them.
		panic("podruntime: hash container " + c.Name + ": " + err.Error())
	}
	h := fnv.New64a()
	h.Write(raw)
	return h.Sum64()
}

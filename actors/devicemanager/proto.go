package devicemanager

import (
	"google.golang.org/protobuf/proto"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// marshal is a plugin's answer as the checkpoint keeps it (upstream's
// AllocResp); an answer that cannot be marshalled is kept as none.
func marshal(r *api.ContainerAllocateResponse) []byte {
	b, err := proto.Marshal(r)
	if err != nil {
		return nil
	}
	return b
}

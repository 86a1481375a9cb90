package csi

import (
	"context"
	"fmt"
	"net"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// NodeInfo is what a driver's NodeGetInfo tells of this node.
type NodeInfo struct {
	// NodeID is the driver's name for this node; never empty.
	NodeID string
	// MaxVolumes is the most volumes of the driver the node can hold; 0
	// when the driver sets no limit.
	MaxVolumes int64
	// Topology are the segments of the node's accessible topology: its
	// keys go into the CSINode, key and value onto the Node's labels.
	Topology map[string]string
}

// NodeGetInfo calls the CSI Node service of the driver at endpoint (a Unix
// socket) once, as upstream's nodeGetInfoV1; ctx bounds the dial and the
// call, so a hung driver costs its caller no more than that.
func NodeGetInfo(ctx context.Context, endpoint string) (NodeInfo, error) {
	conn, err := dial(endpoint)
	if err != nil {
		return NodeInfo{}, err
	}
	defer conn.Close()
	res, err := csipb.NewNodeClient(conn).NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return NodeInfo{}, fmt.Errorf("CSI NodeGetInfo at %s: %w", endpoint, err)
	}
	return NodeInfo{NodeID: res.GetNodeId(), MaxVolumes: res.GetMaxVolumesPerNode(),
		Topology: res.GetAccessibleTopology().GetSegments()}, nil
}

// dial makes a client of the Unix socket at path; it connects at the first
// call. The authority is "localhost", as upstream's, since a socket path is
// no valid one.
func dial(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+path,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
}

// Package unixgrpc holds the one way actorlet makes a gRPC client of a
// plugin's Unix socket (CSI and DRA drivers, device plugins, plugin
// registration).
package unixgrpc

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial makes a client of the Unix socket at path; it connects at the
// first call (or Connect). The authority is "localhost", as upstream's,
// since a socket path is no valid one. opts add to those (interceptors).
func Dial(path string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+path, append([]grpc.DialOption{
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		})}, opts...)...)
}

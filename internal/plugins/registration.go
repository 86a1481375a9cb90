package plugins

import (
	"context"
	"fmt"
	"time"

	"github.com/actorlet/actorlet/internal/unixgrpc"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Upstream's bounds on the handshake (operationexecutor): a plugin that
// does not answer in time fails its registration, and is tried again later.
const (
	DialTimeout    = 10 * time.Second
	GetInfoTimeout = time.Second
	NotifyTimeout  = 5 * time.Second
)

// GetInfo dials the registration socket at path and asks the plugin what
// it is: its type, name, endpoint and supported versions.
func GetInfo(ctx context.Context, path string) (*registerapi.PluginInfo, error) {
	conn, err := dialReady(ctx, path)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, GetInfoTimeout)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("failed to get plugin info using RPC GetInfo at socket %s, err: %w", path, err)
	}
	return info, nil
}

// Notify tells the plugin at path whether it is registered, and if not,
// why (errMsg).
func Notify(ctx context.Context, path string, registered bool, errMsg string) error {
	conn, err := dialReady(ctx, path)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, NotifyTimeout)
	defer cancel()
	_, err = registerapi.NewRegistrationClient(conn).NotifyRegistrationStatus(ctx,
		&registerapi.RegistrationStatus{PluginRegistered: registered, Error: errMsg})
	if err != nil {
		return fmt.Errorf("failed to send registration status at socket %s, err: %w", path, err)
	}
	return nil
}

// dialReady connects to the Unix socket at path and waits, at most
// DialTimeout, until the connection is ready, as upstream's blocking dial.
func dialReady(ctx context.Context, path string) (*grpc.ClientConn, error) {
	conn, err := unixgrpc.Dial(path)
	if err != nil {
		return nil, fmt.Errorf("failed to dial socket %s, err: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	conn.Connect()
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if !conn.WaitForStateChange(ctx, s) {
			_ = conn.Close()
			return nil, fmt.Errorf("failed to dial socket %s, err: %w", path, ctx.Err())
		}
	}
	return conn, nil
}

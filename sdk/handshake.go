package sdk

import (
	"math"

	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk/internal/wire"
	"google.golang.org/grpc"
)

// ProtocolVersion is the major plugin protocol this SDK speaks (package
// ibsm.plugin.v1). Minor additions are announced through Info.Capabilities.
const ProtocolVersion = 1

// SDKVersion is reported by plugins in GetInfo so the host can log it.
const SDKVersion = "0.1.0"

// basePluginName is the plugin-set key of the Plugin service every binary
// serves; kind services are keyed by their Kind.
const basePluginName = "plugin"

// Handshake is the one go-plugin handshake shared by the host and every
// plugin. The cookie is not a security measure; it makes a plugin binary run
// by hand say so instead of hanging.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   "IBSM_PLUGIN_MAGIC_COOKIE",
		MagicCookieValue: "9f1c2b7e4ad34a56b1e0c8d2f37a6e51",
	}
}

// HostPluginSets is what the host passes as ClientConfig.VersionedPlugins:
// every kind under every protocol major it speaks. Dispensing a Kind (or
// "plugin") returns a *RemoteClient.
func HostPluginSets() map[int]plugin.PluginSet {
	set := plugin.PluginSet{basePluginName: &grpcPlugin{}}
	for _, k := range []Kind{KindRouting, KindLIDAssign, KindVLAssign} {
		set[string(k)] = &grpcPlugin{}
	}
	return map[int]plugin.PluginSet{ProtocolVersion: set}
}

// GRPCDialOptions are the options the host adds to go-plugin's own dial
// options: message limits matching the server's and larger HTTP/2 windows,
// which roughly double stream throughput for tens of megabytes of planes.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxMessageBytes), grpc.MaxCallSendMsgSize(wire.MaxMessageBytes)),
		grpc.WithInitialWindowSize(16 << 20),
		grpc.WithInitialConnWindowSize(16 << 20),
	}
}

// newGRPCServer raises grpc-go's 4 MiB server receive limit, which go-plugin
// leaves in place on the plugin side.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.MaxRecvMsgSize(wire.MaxMessageBytes),
		grpc.MaxSendMsgSize(wire.MaxMessageBytes),
		grpc.InitialWindowSize(16<<20),
		grpc.InitialConnWindowSize(16<<20),
		grpc.MaxConcurrentStreams(math.MaxUint16),
	)
	return grpc.NewServer(opts...)
}

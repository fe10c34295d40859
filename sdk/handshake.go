package sdk

import (
	"context"
	"fmt"
	"math"

	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk/internal/wire"
	"google.golang.org/grpc"
)

// ProtocolVersion is the major plugin protocol this SDK speaks; it is the
// go-plugin handshake version, so host and plugin agree on it before any
// call. Compatible additions are announced through Info.Capabilities
// instead. Protocol 2 (SDK 0.2.0) sends nodes and planes as column blocks.
const ProtocolVersion = 2

// retiredProtocols are the protocol majors earlier SDKs spoke. The host
// still negotiates them so that a stale plugin binary gets a precise
// "rebuild" error rather than go-plugin's bare version mismatch.
var retiredProtocols = []int{1}

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
// every kind under the current protocol, where dispensing a Kind (or
// "plugin") returns a *RemoteClient, and under each retired protocol, where
// dispensing fails with a StaleProtocolError.
func HostPluginSets() map[int]plugin.PluginSet {
	sets := map[int]plugin.PluginSet{ProtocolVersion: kindSet(func() plugin.Plugin { return &grpcPlugin{} })}
	for _, v := range retiredProtocols {
		sets[v] = kindSet(func() plugin.Plugin { return &stalePlugin{version: v} })
	}
	return sets
}

func kindSet(mk func() plugin.Plugin) plugin.PluginSet {
	set := plugin.PluginSet{basePluginName: mk()}
	for _, k := range []Kind{KindRouting, KindLIDAssign, KindVLAssign, KindMulticast} {
		set[string(k)] = mk()
	}
	return set
}

// StaleProtocolError is what dispensing from a plugin that speaks a retired
// protocol returns.
type StaleProtocolError struct {
	// Plugin is the protocol the plugin binary speaks.
	Plugin int
}

func (e *StaleProtocolError) Error() string {
	return fmt.Sprintf("plugin speaks ibsm plugin protocol %d, this host speaks %d: rebuild the plugin against ibsm SDK v%s (protocol %d)",
		e.Plugin, ProtocolVersion, SDKVersion, ProtocolVersion)
}

// stalePlugin stands in for every kind of a retired protocol.
type stalePlugin struct {
	plugin.NetRPCUnsupportedPlugin
	version int
}

func (s *stalePlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return &StaleProtocolError{Plugin: s.version}
}

func (s *stalePlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, &StaleProtocolError{Plugin: s.version}
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

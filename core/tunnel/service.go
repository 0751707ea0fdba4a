// Package tunnel speaks the konnectivity protocol (apiserver-network-proxy, as OCM's
// cluster-proxy add-on uses it) over grpc-go with the konnectivity-client module's generated
// Packet messages: agents on managed clusters hold AgentService/Connect streams open to the hub,
// and the hub dials TCP connections to the managed cluster through them.
//
// What this package adds to the wire protocol, which has no flow control of its own: every
// connection carried by a stream has a bounded queue of received data, and a connection whose
// reader stops reading is cut (CLOSE with an error naming the address) instead of stalling the
// stream and every other connection on it. See Limits.
package tunnel

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// Metadata keys of the protocol (apiserver-network-proxy's proto/header, as plain strings).
const (
	// MetadataAgentID is the agent's identity (a UUID per agent process), sent by the agent.
	MetadataAgentID = "agentID"
	// MetadataAgentIdentifiers are the destinations an agent serves, sent by the agent as a
	// URL query string: host=, ipv4=, ipv6=, cidr=, default-route= (unknown keys are ignored).
	MetadataAgentIdentifiers = "agentIdentifiers"
	// MetadataServerID and MetadataServerCount are the server's answer in the stream's header
	// metadata: its identity, and how many servers there are. An agent keeps one stream open
	// to each of serverCount distinct servers.
	MetadataServerID    = "serverID"
	MetadataServerCount = "serverCount"
)

// AgentService is the gRPC service name (the proto file has no package).
const AgentService = "AgentService"

// AgentConnectMethod is the full method name of AgentService/Connect.
const AgentConnectMethod = "/" + AgentService + "/Connect"

// PacketStream is a bidirectional stream of Packets: either end of AgentService/Connect or
// ProxyService/Proxy.
type PacketStream interface {
	Send(*konnectivity.Packet) error
	Recv() (*konnectivity.Packet, error)
	Context() context.Context
}

// AgentServiceServer serves AgentService/Connect: each call is one agent's stream.
type AgentServiceServer interface {
	Connect(AgentConnectServer) error
}

// AgentConnectServer is the server's end of an AgentService/Connect stream.
type AgentConnectServer interface {
	PacketStream
	SetHeader(metadata.MD) error
	SendHeader(metadata.MD) error
}

// AgentServiceDesc is AgentService as protoc-gen-go-grpc would generate it from
// apiserver-network-proxy's agent.proto: one bidirectional stream of Packets.
var AgentServiceDesc = grpc.ServiceDesc{
	ServiceName: AgentService,
	HandlerType: (*AgentServiceServer)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Connect",
		Handler:       agentConnectHandler,
		ServerStreams: true,
		ClientStreams: true,
	}},
	Metadata: "agent.proto",
}

// RegisterAgentService registers srv's AgentService on s.
func RegisterAgentService(s grpc.ServiceRegistrar, srv AgentServiceServer) {
	s.RegisterService(&AgentServiceDesc, srv)
}

func agentConnectHandler(srv any, stream grpc.ServerStream) error {
	return srv.(AgentServiceServer).Connect(&agentConnectServer{stream})
}

type agentConnectServer struct{ grpc.ServerStream }

func (s *agentConnectServer) Send(p *konnectivity.Packet) error { return s.SendMsg(p) }

func (s *agentConnectServer) Recv() (*konnectivity.Packet, error) {
	p := new(konnectivity.Packet)
	if err := s.RecvMsg(p); err != nil {
		return nil, err
	}
	return p, nil
}

// AgentConnectClient is the agent's end of an AgentService/Connect stream.
type AgentConnectClient interface {
	PacketStream
	Header() (metadata.MD, error)
	CloseSend() error
}

// Connect opens an AgentService/Connect stream on cc; ctx carries the agent's outgoing
// metadata and ends the stream.
func Connect(ctx context.Context, cc grpc.ClientConnInterface, opts ...grpc.CallOption) (AgentConnectClient, error) {
	s, err := cc.NewStream(ctx, &AgentServiceDesc.Streams[0], AgentConnectMethod, opts...)
	if err != nil {
		return nil, err
	}
	return &agentConnectClient{s}, nil
}

type agentConnectClient struct{ grpc.ClientStream }

func (c *agentConnectClient) Send(p *konnectivity.Packet) error { return c.SendMsg(p) }

func (c *agentConnectClient) Recv() (*konnectivity.Packet, error) {
	p := new(konnectivity.Packet)
	if err := c.RecvMsg(p); err != nil {
		return nil, err
	}
	return p, nil
}

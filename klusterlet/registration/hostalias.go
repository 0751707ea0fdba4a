package registration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// HostAlias sends connections for Hostname to IP, as a hosts-file entry would (OCM's Klusterlet
// hubApiServerHostAlias, which OCM's operator puts in the agents' Pods).
type HostAlias struct {
	Hostname, IP string
}

// ParseHostAlias parses HOST=IP.
func ParseHostAlias(s string) (HostAlias, error) {
	host, ip, ok := strings.Cut(s, "=")
	if !ok || host == "" || net.ParseIP(ip) == nil {
		return HostAlias{}, fmt.Errorf("host alias %q is not HOST=IP with an IP address", s)
	}
	return HostAlias{Hostname: host, IP: ip}, nil
}

// Dial returns a DialFunc for Config.HubDial that sends connections to the alias's host name
// to its IP address and dials the others, and the aliased ones, with next (nil: a
// net.Dialer). TLS still verifies the host name, as with the hosts-file entry.
func (h HostAlias) Dial(next DialFunc) DialFunc {
	if next == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		next = d.DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(address); err == nil && strings.EqualFold(strings.TrimSuffix(host, "."), h.Hostname) {
			address = net.JoinHostPort(h.IP, port)
		}
		return next(ctx, network, address)
	}
}

package environment

import (
	"fmt"
	"net"
)

// freePorts asks the kernel for n distinct free loopback TCP ports. All listeners stay
// open until every port is chosen so the n ports differ; another process can still take
// one before our child binds it, which the caller handles by retrying with new ports.
func freePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

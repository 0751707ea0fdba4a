// Package leaderelection holds what the hub's and the klusterlet's leader elections share:
// OCM's timing defaults and how a replica names itself in the Lease.
package leaderelection

import (
	"os"
	"time"

	"github.com/google/uuid"
)

// OCM's controller defaults: a leader keeps its Lease 137 s without renewing, gives up after
// trying to renew for 107 s, and replicas try every 26 s. They ride out an API server restart
// without a change of leader.
const (
	DefaultLeaseDuration = 137 * time.Second
	DefaultRenewDeadline = 107 * time.Second
	DefaultRetryPeriod   = 26 * time.Second
)

// Identity is a replica's holder identity: its host name (a Pod's name) with a random suffix,
// so that a restarted process with the same name does not inherit the old one's Lease.
func Identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "flotilla"
	}
	return host + "_" + uuid.NewString()
}

package leaderelection

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

func TestWithDefaultsAndValidate(t *testing.T) {
	c := Config{Enabled: true}.WithDefaults("ns", "lock")
	if c.Namespace != "ns" || c.Name != "lock" || c.LeaseDuration != DefaultLeaseDuration ||
		c.RenewDeadline != DefaultRenewDeadline || c.RetryPeriod != DefaultRetryPeriod || c.Identity == "" {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("OCM's defaults: %v", err)
	}
	set := Config{Namespace: "mine", Name: "l", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second, Identity: "me"}
	if got := set.WithDefaults("ns", "lock"); got != set {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"lease not above renew deadline", Config{LeaseDuration: 3 * time.Second, RenewDeadline: 3 * time.Second}, "must exceed the renew deadline"},
		{"renew deadline within the jittered retry", Config{RenewDeadline: time.Second, RetryPeriod: time.Second}, "times the retry period"},
		{"negative retry", Config{RetryPeriod: -time.Second}, "must be positive"},
	} {
		err := tc.c.WithDefaults("ns", "lock").Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Config{LeaseDuration: time.Second}.WithDefaults("ns", "l"), "test", logrDiscard); err == nil {
		t.Error("New must validate")
	}
}

func TestManagerOptions(t *testing.T) {
	c := Config{Enabled: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond}.WithDefaults("ns", "lock")
	e, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, c, "test", logrDiscard)
	if err != nil {
		t.Fatal(err)
	}
	var o manager.Options
	e.ManagerOptions(&o)
	if !o.LeaderElection || o.LeaderElectionResourceLockInterface == nil || !o.LeaderElectionReleaseOnCancel ||
		*o.LeaseDuration != 4*time.Second || *o.RenewDeadline != 3*time.Second || *o.RetryPeriod != 300*time.Millisecond {
		t.Errorf("manager options: %+v", o)
	}
	if id := o.LeaderElectionResourceLockInterface.Identity(); id != c.Identity {
		t.Errorf("lock identity %q, want %q", id, c.Identity)
	}
	if d := o.LeaderElectionResourceLockInterface.Describe(); d != "ns/lock" {
		t.Errorf("lock %q, want ns/lock", d)
	}
}

var logrDiscard = logr.Discard()

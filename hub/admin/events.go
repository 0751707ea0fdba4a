package admin

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// EventTime is when an Event last happened, whichever API recorded it (core/v1's
// lastTimestamp, events.k8s.io's series or eventTime), else when it was created.
func EventTime(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

package registration

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/core/backoff"
)

// notifier coalesces change notifications: many events between two syncs make
// one sync.
type notifier chan struct{}

func newNotifier() notifier { return make(notifier, 1) }

func (n notifier) notify() {
	select {
	case n <- struct{}{}:
	default:
	}
}

// watchForever runs start's watch until ctx ends, restarting it (with backoff on
// errors) whenever the server closes it. Watches are started without a resource
// version, so each (re)start replays the current objects as Added events and
// nothing that happened while disconnected is missed. what names the watched
// objects in logs.
func watchForever(ctx context.Context, log logr.Logger, clk clock.Clock, b *backoff.Backoff, what string,
	start func(ctx context.Context) (watch.Interface, error), onEvent func(watch.Event)) {
	for ctx.Err() == nil {
		w, err := start(ctx)
		if err != nil {
			d := b.Next()
			log.Info("Watch failed, retrying", "objects", what, "error", err.Error(), "retryIn", d.String())
			if !backoff.Sleep(ctx, clk, d) {
				return
			}
			continue
		}
		healthy := consume(ctx, w, onEvent)
		w.Stop()
		if healthy {
			b.Reset()
		} else if !backoff.Sleep(ctx, clk, b.Next()) {
			return
		}
	}
}

// consume forwards events until the watch ends; it reports whether the watch
// delivered anything other than errors.
func consume(ctx context.Context, w watch.Interface, onEvent func(watch.Event)) bool {
	healthy := false
	for {
		select {
		case <-ctx.Done():
			return healthy
		case ev, ok := <-w.ResultChan():
			if !ok {
				return healthy
			}
			if ev.Type == watch.Error {
				return false
			}
			healthy = true
			onEvent(ev)
		}
	}
}

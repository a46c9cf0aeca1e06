// Package watchtiming times changes in a cluster through one client-go watch,
// with no kubectl start-up in the figures: each event is stamped when it
// arrives, and Await reads events until a condition holds. The walkthrough
// (tests/e2e) and the drift benchmark (hack/bench/drift) share it, so that
// both measure a repair the same way.
//
// It is test and benchmark code: the hook never imports it (it keeps the
// hook binary free of client-go).
package watchtiming

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Event is a watch event and when it arrived.
type Event struct {
	Type   watch.EventType
	Object runtime.Object
	At     time.Time
}

// Watch is a watch that resumes after the API server closes it.
type Watch struct {
	events <-chan watch.Event
	stop   func()
}

// ListFunc lists the watched objects and returns the list's resourceVersion,
// from which the watch starts (so no event after the list is missed).
type ListFunc func(ctx context.Context) (resourceVersion string, err error)

// WatchFunc opens a watch with the given options (the caller adds its
// selectors).
type WatchFunc func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)

// Start lists, then watches from the list's resourceVersion until ctx ends
// or Stop is called.
func Start(ctx context.Context, list ListFunc, w WatchFunc) (*Watch, error) {
	rv, err := list(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return w(ctx, o)
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return &Watch{events: rw.ResultChan(), stop: func() { cancel(); rw.Stop() }}, nil
}

// Client is the List and Watch of a typed client, e.g. a
// ResourceQuotaInterface (L is its list type, *corev1.ResourceQuotaList).
type Client[L metav1.ListInterface] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// StartWith watches what c lists under fieldSelector (empty: everything),
// from the list's resourceVersion on.
func StartWith[L metav1.ListInterface](ctx context.Context, c Client[L], fieldSelector string) (*Watch, error) {
	return Start(ctx, func(ctx context.Context) (string, error) {
		l, err := c.List(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
		if err != nil {
			return "", err
		}
		return l.GetResourceVersion(), nil
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = fieldSelector
		return c.Watch(ctx, o)
	})
}

// Stop ends the watch.
func (w *Watch) Stop() { w.stop() }

// Drain drops the events that arrived so far.
func (w *Watch) Drain() {
	for {
		select {
		case <-w.events:
		default:
			return
		}
	}
}

// Await reads events until done returns true for one, and returns that
// event (stamped on arrival), how long after start it arrived, and a trace of
// every event read, each described by describe and its time since start.
// Timing from just before the request that causes a change, to the arrival
// of the event that shows it repaired, is what the figures mean.
func (w *Watch) Await(start time.Time, timeout time.Duration, done func(Event) bool, describe func(Event) string) (Event, time.Duration, string, error) {
	var trace []string
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return Event{}, 0, strings.Join(trace, " "), fmt.Errorf("watch closed")
			}
			e := Event{Type: ev.Type, Object: ev.Object, At: time.Now()}
			if ev.Type == watch.Error {
				return e, 0, strings.Join(trace, " "), fmt.Errorf("watch error: %v", ev.Object)
			}
			took := e.At.Sub(start)
			trace = append(trace, fmt.Sprintf("%s@%s", describe(e), Ms(took)))
			if done(e) {
				return e, took, strings.Join(trace, " "), nil
			}
		case <-timer.C:
			return Event{}, 0, strings.Join(trace, " "), fmt.Errorf("nothing within %s; events: %s", timeout, strings.Join(trace, " "))
		}
	}
}

// Ms prints a duration in milliseconds with one decimal.
func Ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

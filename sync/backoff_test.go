package sync

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestBackoffAfterErrorsIsBoundedByTheSyncsInterval(t *testing.T) {
	capped := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "every-minute"}}
	unknown := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "gone"}}
	l := cappedBackoff(50*time.Millisecond, 15*time.Minute, func(req reconcile.Request) (time.Duration, bool) {
		return time.Minute, req == capped
	})
	var last, lastUnknown time.Duration
	for i := 0; i < 20; i++ {
		last, lastUnknown = l.When(capped), l.When(unknown)
	}
	// 50 ms doubled 19 times is far beyond both bounds.
	if last != time.Minute {
		t.Errorf("after 20 failures, backoff = %v, want the Sync's interval (1m)", last)
	}
	if lastUnknown != 15*time.Minute {
		t.Errorf("after 20 failures of a Sync not in the cache, backoff = %v, want the maximum (15m)", lastUnknown)
	}
	if first := func() time.Duration { l.Forget(capped); return l.When(capped) }(); first != 50*time.Millisecond {
		t.Errorf("after Forget, backoff = %v, want the minimum again", first)
	}
}

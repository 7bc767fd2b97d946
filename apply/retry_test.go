package apply

import (
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestRetryTransient(t *testing.T) {
	defer func(b wait.Backoff) { transientBackoff = b }(transientBackoff)
	transientBackoff.Duration = time.Millisecond // the count of attempts is what is tested
	cm := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name     string
		err      error
		attempts int
	}{
		{"a 503 is retried until the backoff is spent", apierrors.NewServiceUnavailable("down"), transientBackoff.Steps},
		{"a 500 is retried", apierrors.NewInternalError(errors.New("boom")), transientBackoff.Steps},
		{"a reset connection is retried", syscall.ECONNRESET, transientBackoff.Steps},
		{"a cut answer is retried", io.ErrUnexpectedEOF, transientBackoff.Steps},
		{"an invalid object is not", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil), 1},
		{"a conflict is not", apierrors.NewConflict(cm, "x", errors.New("changed")), 1},
		{"forbidden is not", apierrors.NewForbidden(cm, "x", errors.New("no")), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			err := retryTransient(t.Context(), func() error { attempts++; return tc.err })
			if !errors.Is(err, tc.err) && err != tc.err { //nolint:errorlint // the very error returned
				t.Errorf("error = %v, want %v", err, tc.err)
			}
			if attempts != tc.attempts {
				t.Errorf("%d attempts, want %d", attempts, tc.attempts)
			}
		})
	}

	t.Run("a request that recovers succeeds", func(t *testing.T) {
		attempts := 0
		err := retryTransient(t.Context(), func() error {
			if attempts++; attempts < 3 {
				return apierrors.NewServiceUnavailable("down")
			}
			return nil
		})
		if err != nil || attempts != 3 {
			t.Errorf("error %v after %d attempts, want success on the third", err, attempts)
		}
	})
}

package ui

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// scope is which Syncs the UI watches: those of every namespace, or of one.
type scope struct {
	// namespace is the one namespace watched; "" is every namespace.
	namespace string
	// narrowed says the user asked for every namespace but may not list them.
	narrowed bool
}

// findScope asks the API server, as the user, for one Sync of every namespace:
// a user who may list them sees them all (unless all is false), one who may not
// sees their own namespace, if they may list that. A user who may list neither
// gets an error that says so.
func findScope(ctx context.Context, c client.Reader, namespace string, all bool) (scope, error) {
	if all {
		err := c.List(ctx, &v1alpha1.SyncList{}, client.Limit(1))
		switch {
		case err == nil:
			return scope{}, nil
		case !apierrors.IsForbidden(err):
			return scope{}, fmt.Errorf("listing Syncs: %w", err)
		}
	}
	if namespace == "" {
		return scope{}, fmt.Errorf("you may not list Syncs in every namespace, and no namespace is set: name one with -n")
	}
	if err := c.List(ctx, &v1alpha1.SyncList{}, client.InNamespace(namespace), client.Limit(1)); err != nil {
		return scope{}, fmt.Errorf("listing Syncs in namespace %s: %w", namespace, err)
	}
	return scope{namespace: namespace, narrowed: all}, nil
}

// cacheNamespaces is the cache's DefaultNamespaces for the scope: nil watches
// every namespace.
func (sc scope) cacheNamespaces() map[string]cache.Config {
	if sc.namespace == "" {
		return nil
	}
	return map[string]cache.Config{sc.namespace: {}}
}

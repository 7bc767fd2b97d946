package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// What the commands that read Syncs share: reading one, naming it, reading its
// conditions, and completing names on the shell.

// getSync reads the Sync namespace/name; a missing Sync is an error that says so.
func getSync(ctx context.Context, c client.Reader, namespace, name string) (*v1alpha1.Sync, error) {
	s := &v1alpha1.Sync{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("no Sync %s/%s", namespace, name)
	case err != nil:
		return nil, fmt.Errorf("reading Sync %s/%s: %w", namespace, name, err)
	}
	return s, nil
}

// syncTarget is the Sync a command acts on: its name and the namespace -n (or the
// kubeconfig context) selects, with a client.
type syncTarget struct {
	c               client.Client
	namespace, name string
}

func (k *kubeFlags) target(command, name string) (*syncTarget, error) {
	ns, err := k.namespace()
	if err != nil {
		return nil, err
	}
	c, err := k.client(command)
	if err != nil {
		return nil, err
	}
	return &syncTarget{c: c, namespace: ns, name: name}, nil
}

func (t *syncTarget) get(ctx context.Context) (*v1alpha1.Sync, error) {
	return getSync(ctx, t.c, t.namespace, t.name)
}

func (t *syncTarget) String() string { return "Sync " + t.namespace + "/" + t.name }

// condition returns the condition of type typ of s, or nil.
func condition(s *v1alpha1.Sync, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(s.Status.Conditions, typ)
}

// isTrue reports whether s has condition typ True, written for its current spec.
func isTrue(s *v1alpha1.Sync, typ string) bool {
	c := condition(s, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == s.Generation
}

// readyMessage is the message of the Ready condition, or "" (plan.ReadyMessage).
func readyMessage(s *v1alpha1.Sync) string { return plan.ReadyMessage(s) }

// shortRevision writes "main@sha1:4f2c1a…" as "main@4f2c1a2" (plan.ShortRevision).
func shortRevision(rev string) string { return plan.ShortRevision(rev) }

// revisionHash is the commit hash of a revision, "" when it names none.
func revisionHash(rev string) string {
	if i := strings.LastIndex(rev, "sha1:"); i >= 0 {
		return rev[i+len("sha1:"):]
	}
	return ""
}

// completeSyncNames completes the first argument with the names of the Syncs in
// the namespace -n selects.
func completeSyncNames(kube *kubeFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		t, err := kube.target("completion", "")
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list := &v1alpha1.SyncList{}
		if err := t.c.List(cmd.Context(), list, client.InNamespace(t.namespace)); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []cobra.Completion
		for _, s := range list.Items {
			if strings.HasPrefix(s.Name, toComplete) {
				names = append(names, s.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

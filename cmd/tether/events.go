package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

func newEventsCommand(kube *kubeFlags) *cobra.Command {
	var output string
	remote := &remoteFlags{}
	cmd := &cobra.Command{
		Use:   "events NAME",
		Short: "Show the recent Events of a Sync and of the objects it manages",
		Long: `Show the Events of a Sync (revisions applied, drift corrected, fields given up,
failures) and of the namespaced objects in its inventory (a Deployment's scaling,
a Pod's image pulls), oldest first, as the API server still keeps them (an hour by
default). For a Sync that applies to another cluster, its objects' Events are read
there (see --cluster-kubeconfig). The table cuts long messages to one line; -o wide prints them whole,
-o json prints the Events as the API server holds them.`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "wide" && output != "json" {
				return usageError(cmd, fmt.Sprintf("-o %q: want table, wide or json", output))
			}
			return runEvents(cmd.Context(), kube, remote, args[0], output, cmd.OutOrStdout(), time.Now())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table (messages cut to one line), wide (messages whole) or json.")
	remote.bind(cmd.Flags())
	kube.bind(cmd)
	return cmd
}

func runEvents(ctx context.Context, kube *kubeFlags, remote *remoteFlags, name, output string, w io.Writer, now time.Time) error {
	t, err := kube.target("events", name)
	if err != nil {
		return err
	}
	s, err := t.get(ctx)
	if err != nil {
		return err
	}
	objects := client.Reader(t.c)
	if s.Spec.Destination.IsRemote() {
		// The Sync's Events are on this cluster, its objects' on theirs.
		if _, objects, err = remote.connect(ctx, t.c, s); err != nil {
			return err
		}
	}
	events, err := syncEvents(ctx, t.c, objects, s)
	if err != nil {
		return err
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(&corev1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"}, Items: events})
	}
	if len(events) == 0 {
		_, err := fmt.Fprintf(w, "No Events of %s or its objects.\n", t)
		return err
	}
	return printEventTable(w, events, s.Namespace, output == "wide", now)
}

// printEventTable writes one line per Event; messages are cut to one line unless
// whole, where their line breaks become spaces.
func printEventTable(w io.Writer, events []corev1.Event, namespace string, whole bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range events {
		object := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		if e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != namespace {
			object = e.InvolvedObject.Kind + "/" + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		}
		msg := oneLine(e.Message)
		if whole {
			msg = strings.Join(strings.Fields(e.Message), " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", age(metav1.NewTime(eventTime(e)), now), e.Type, e.Reason, object, msg)
	}
	return tw.Flush()
}

// syncEvents lists the Events of s, through c, and of the namespaced objects of
// its inventory (plan.EventsOf), through objects: c, or the cluster s applies to
// when it is another, whose Events about a Sync are not its.
func syncEvents(ctx context.Context, c, objects client.Reader, s *v1alpha1.Sync) ([]corev1.Event, error) {
	scope := plan.EventsOf(s)
	var out []corev1.Event
	list := func(r client.Reader, ns string, keep func(*corev1.Event) bool) error {
		l := &corev1.EventList{}
		if err := r.List(ctx, l, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing the Events of namespace %s: %w", ns, err)
		}
		for i := range l.Items {
			if scope.Has(&l.Items[i]) && keep(&l.Items[i]) {
				out = append(out, l.Items[i])
			}
		}
		return nil
	}
	if objects != c {
		aboutSync := func(e *corev1.Event) bool { return e.InvolvedObject.Kind == "Sync" }
		if err := list(c, s.Namespace, aboutSync); err != nil {
			return nil, err
		}
		for _, ns := range scope.Namespaces() {
			if err := list(objects, ns, func(e *corev1.Event) bool { return !aboutSync(e) }); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, ns := range scope.Namespaces() {
		if err := list(c, ns, func(*corev1.Event) bool { return true }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// eventTime is when an Event last happened (plan.EventTime).
func eventTime(e corev1.Event) time.Time { return plan.EventTime(&e) }

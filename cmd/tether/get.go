package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// getFlags are the command line of `tether get`.
type getFlags struct {
	kube          *kubeFlags
	allNamespaces bool
	output        string
}

func newGetCommand(kube *kubeFlags) *cobra.Command {
	f := &getFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List Syncs: revision, sync, health, readiness, suspension",
		Long: `List the Syncs of a namespace (or of all, with -A), or show one, as a table:
the cluster it applies to when some Syncs apply to another (CLUSTER), the
revision last applied (short hash), whether the cluster matches git (SYNC),
whether what was applied works (HEALTH), READY, SUSPENDED, PINNED, RUN (the phase
and wave a revision with hooks or waves is at, "Sync/1"; "failed" when it stopped
there; "-" when no run is under way), AGE and the Ready condition's message.
-o yaml and -o json print the Syncs whole.`,
		Example: `  tether get -A
  tether get web -n tether-system -o yaml`,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError(cmd, "want at most one NAME")
			}
			if f.output != "table" && f.output != "yaml" && f.output != "json" {
				return usageError(cmd, fmt.Sprintf("-o %q: want table, yaml or json", f.output))
			}
			return f.run(cmd.Context(), args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "List the Syncs of every namespace.")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "Output format: table, yaml or json.")
	kube.bind(cmd)
	return cmd
}

func (f *getFlags) run(ctx context.Context, args []string, w io.Writer) error {
	t, err := f.kube.target("get", "")
	if err != nil {
		return err
	}
	list := &v1alpha1.SyncList{}
	if len(args) == 1 {
		s, err := getSync(ctx, t.c, t.namespace, args[0])
		if err != nil {
			return err
		}
		list.Items = []v1alpha1.Sync{*s}
	} else {
		var opts []client.ListOption
		if !f.allNamespaces {
			opts = append(opts, client.InNamespace(t.namespace))
		}
		if err := t.c.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("listing Syncs: %w", err)
		}
	}
	switch f.output {
	case "yaml", "json":
		return printObjects(w, f.output, list)
	}
	if len(list.Items) == 0 {
		_, err := fmt.Fprintln(w, "No Syncs found.")
		return err
	}
	return printSyncTable(w, list.Items, f.allNamespaces, time.Now())
}

// printObjects prints Syncs as YAML or JSON, as kubectl get -o does: one object
// alone, several as a List.
func printObjects(w io.Writer, format string, list *v1alpha1.SyncList) error {
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Sync"))
		list.Items[i].ManagedFields = nil
	}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("SyncList"))
	var obj any = list
	if len(list.Items) == 1 {
		obj = &list.Items[0]
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(obj)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// printSyncTable writes one line per Sync. When a SyncSet made some of them,
// a SYNCSET column names it and the Syncs of one SyncSet are listed together;
// when some apply to another cluster (spec.destination), a CLUSTER column names
// where each applies.
func printSyncTable(w io.Writer, syncs []v1alpha1.Sync, namespaces bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	rest := "REVISION\tSYNC\tHEALTH\tREADY\tSUSPENDED\tPINNED\tRUN\tAGE\tMESSAGE"
	header := "NAME\t" + rest
	remote := slices.ContainsFunc(syncs, func(s v1alpha1.Sync) bool { return s.Spec.Destination.IsRemote() })
	if remote {
		header = "NAME\tCLUSTER\t" + rest
	}
	verified := slices.ContainsFunc(syncs, func(s v1alpha1.Sync) bool { return s.Spec.Source.Verifies() })
	if verified {
		header = strings.Replace(header, "REVISION\t", "REVISION\tSIGNED BY\t", 1)
	}
	sets := groupBySyncSet(syncs)
	if sets {
		header = "SYNCSET\t" + header
	}
	if namespaces {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for i := range syncs {
		s := &syncs[i]
		revision := orDash(shortRevision(s.Status.LastAppliedRevision))
		if verified {
			revision += "\t" + orDash(signerName(s.Status.LastAppliedSigner))
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", revision,
			orDash(string(s.Status.Sync)), orDash(string(s.Status.Health)), readyStatus(s),
			strconv.FormatBool(s.Spec.Suspend), pinnedTo(s), runAt(s.Status.Run), age(s.CreationTimestamp, now), oneLine(readyMessage(s)))
		if remote {
			row = s.Spec.Destination.ClusterName() + "\t" + row
		}
		row = s.Name + "\t" + row
		if sets {
			row = orDash(s.Labels[v1alpha1.SyncSetLabel]) + "\t" + row
		}
		if namespaces {
			row = s.Namespace + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// signerName is the identity of who signed the applied revision, without the
// method and fingerprint status.lastAppliedSigner follows it with (tether
// tree prints them): "Alice <alice@example.com>". Two signers (a tag and its
// commit) are both named.
func signerName(signer string) string {
	names := strings.Split(signer, "; ")
	for i, n := range names {
		if at := strings.LastIndex(n, " ("); at > 0 {
			names[i] = n[:at]
		}
	}
	return strings.Join(names, ", ")
}

// groupBySyncSet sorts syncs by namespace, SyncSet (those of none first) and
// name, and reports whether a SyncSet made any of them.
func groupBySyncSet(syncs []v1alpha1.Sync) bool {
	made := false
	for i := range syncs {
		if syncs[i].Labels[v1alpha1.SyncSetLabel] != "" {
			made = true
		}
	}
	if !made {
		return false
	}
	sort.SliceStable(syncs, func(i, j int) bool {
		a, b := &syncs[i], &syncs[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if sa, sb := a.Labels[v1alpha1.SyncSetLabel], b.Labels[v1alpha1.SyncSetLabel]; sa != sb {
			return sa < sb
		}
		return a.Name < b.Name
	})
	return true
}

// runAt is where a revision's ordered run stands (status.run): "<phase>/<wave>"
// while it runs, followed by "failed" when it stopped there; "-" when no run is
// under way (none, or the last one succeeded).
func runAt(run *v1alpha1.RunStatus) string {
	switch {
	case run == nil || run.Phase == "":
		return "-"
	case run.State == v1alpha1.RunRunning:
		return fmt.Sprintf("%s/%d", run.Phase, run.Wave)
	case run.State == v1alpha1.RunFailed:
		return fmt.Sprintf("%s/%d failed", run.Phase, run.Wave)
	}
	return "-"
}

// pinnedTo is the short commit the Sync is pinned to (tether.dev/pin-revision),
// "-" when it follows its ref.
func pinnedTo(s *v1alpha1.Sync) string {
	pin := s.GetAnnotations()[v1alpha1.PinRevisionAnnotation]
	if pin == "" {
		return "-"
	}
	return shortRevision("sha1:" + source.OneLine(pin, 80))
}

// readyStatus is the Ready condition's status, "Unknown" while the status is of
// an older spec (plan.ReadyStatus).
func readyStatus(s *v1alpha1.Sync) string { return plan.ReadyStatus(s) }

func age(created metav1.Time, now time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(created.Time))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps the first line of a message, short enough for a table.
func oneLine(msg string) string {
	const maxRunes = 100
	if first, _, cut := strings.Cut(msg, "\n"); cut {
		msg = first + " …"
	}
	if r := []rune(msg); len(r) > maxRunes {
		msg = string(r[:maxRunes]) + "…"
	}
	return msg
}

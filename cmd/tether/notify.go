package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/notify"
)

// notifyFlags are the flags of `tether controller` for notifications.
type notifyFlags struct {
	enabled      bool
	allowedHosts []string
}

func bindNotifyFlags(fs *flag.FlagSet, n *notifyFlags) {
	fs.BoolVar(&n.enabled, "notifications", true, "Send what Notifiers ask for (chat messages, commit statuses, Alertmanager alerts); the leader sends. Without the Notifier CRD installed, nothing is sent.")
	fs.Func("notify-allowed-hosts", "Comma-separated hosts notifications may reach (\"hooks.slack.com\", \"*.corp.example\" for subdomains). Default: any. A tenant's Notifier address is otherwise a way to make the agent call internal addresses.", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				n.allowedHosts = append(n.allowedHosts, h)
			}
		}
		return nil
	})
}

// addNotifier adds the notify Controller to the manager, when notifications are
// on and the Notifier CRD is installed.
func addNotifier(mgr ctrl.Manager, f *controllerFlags) error {
	if !f.notify.enabled {
		return nil
	}
	gvk := v1alpha1.GroupVersion.WithKind("Notifier")
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			ctrl.Log.WithName("setup").Info("the Notifier CRD is not installed: no notifications are sent")
			return nil
		}
		return fmt.Errorf("looking up the Notifier CRD: %w", err)
	}
	opts := notify.DefaultOptions()
	opts.Sender.AllowedHosts = f.notify.allowedHosts
	opts.Registerer = ctrlmetrics.Registry
	events, err := syncEventsCache(mgr, f.watchNamespaces)
	if err != nil {
		return err
	}
	if err := mgr.Add(events); err != nil {
		return err
	}
	c, err := notify.New(notify.Cluster{Cache: mgr.GetCache(), Secrets: mgr.GetAPIReader(), Status: mgr.GetClient(), Events: events}, opts)
	if err != nil {
		return err
	}
	return mgr.Add(c)
}

// syncEventsCache is a cache of the Kubernetes Events recorded on Syncs only
// (a field selector the API server applies), in the namespaces the agent
// watches, for the Notifiers: a drift corrected, a person's action.
func syncEventsCache(mgr ctrl.Manager, namespaces []string) (cache.Cache, error) {
	opts := cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "Sync")},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return cache.New(mgr.GetConfig(), opts)
}

// newNotifyCommand builds `tether notify`.
func newNotifyCommand(kube *kubeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Work with Notifiers (docs/notifications.md)",
	}
	var sha string
	test := &cobra.Command{
		Use:   "test NAME",
		Short: "Send a test message through a Notifier and print the receiver's answer",
		Long: `Send a test message through the Notifier NAME, as you: its Secret is read with
your rights, and the request goes from this machine, not from the agent. A chat or
webhook receiver gets a message; a commit-status receiver a pending status of the
commit --sha for the context tether/NAMESPACE/notify-test; Alertmanager a resolved
alert. Prints the answer's status code; exit 1 when the receiver refused.`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return notifyTest(cmd.Context(), kube, args[0], sha, cmd.OutOrStdout())
		},
	}
	test.Flags().StringVar(&sha, "sha", "", "Commit hash a commit-status receiver's test status is set on.")
	kube.bind(test)
	cmd.AddCommand(test)
	return cmd
}

func notifyTest(ctx context.Context, kube *kubeFlags, name, sha string, w io.Writer) error {
	ns, err := kube.namespace()
	if err != nil {
		return err
	}
	c, err := kube.client("notify")
	if err != nil {
		return err
	}
	nf := &v1alpha1.Notifier{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nf); err != nil {
		return fmt.Errorf("reading Notifier %s/%s: %w", ns, name, err)
	}
	r, ca, err := notify.ResolveReceiver(ctx, c, nf)
	if err != nil {
		return err
	}
	if r.Type.IsCommitStatus() && sha == "" {
		return fmt.Errorf("%w: a %s Notifier sets a commit status: name the commit with --sha", errUsage, r.Type)
	}
	req, err := notify.TestRequest(r, nf, sha)
	if err != nil {
		return err
	}
	s, err := notify.NewSender(notify.DefaultSenderOptions(), ca, r.Proxy)
	if err != nil {
		return err
	}
	status, err := s.Send(ctx, req)
	if err != nil {
		return fmt.Errorf("Notifier %s/%s: %w", ns, name, err)
	}
	_, err = fmt.Fprintf(w, "► Notifier %s/%s: the receiver answered %d\n", ns, name, status)
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
)

// errDiffFound is what `tether diff` returns when the cluster differs from the
// desired state: the diffs are printed already, and the command exits 1.
var errDiffFound = errors.New("the cluster differs from the desired state")

const diffLong = `Compare what a Sync, a git repository or a local directory renders to with the
live cluster, through a server-side dry-run of the apply Tether would make, and
print a unified YAML diff of each object that differs.

A Sync (by NAME in the cluster, or -f from a manifest) is diffed exactly as the
agent would apply it: its destination namespace, ownership marks, ignore rules,
autoscaled replicas and the fields it gave up after a fight (status.fieldsGivenUp
of the Sync in the cluster). Objects the Sync applied that left git are shown as
pruned, with the reason, from the inventory of the Sync in the cluster or, when
there is none, from the tether.dev/sync label.

Secret values are never printed, only whether they changed; --decrypt --keys DIR
decrypts SOPS-encrypted files with the keys in DIR first, as the agent does with a
Sync's spec.decryption (with --use-secret-ref, the keys the Sync names are read from
the cluster instead), so that an encrypted Secret compares by its real values (still
never printed). Nothing is written to
the cluster. A Sync's spec.source.secretRef is read only with --use-secret-ref,
as whoever runs the command. The agent acts as the Sync's spec.serviceAccountName;
--as system:serviceaccount:NAMESPACE:NAME shows what that account may apply.

Exit status: 0 nothing differs, 1 something differs, 2 error.`

const diffExample = `  # In a pull request's check: does the cluster differ from this branch?
  tether diff -f clusters/prod/web.yaml

  # A Sync in the cluster, with the credentials it names
  tether diff web -n tether-system --use-secret-ref

  # A local directory, before pushing it
  tether diff --dir apps/web -n web`

// diffFlags are the command line of `tether diff`. Exactly one of a NAME, file,
// url and dir says where the desired state comes from.
type diffFlags struct {
	kube         *kubeFlags
	name         string
	file         string
	url          string
	branch       string
	tag          string
	commit       string
	path         string
	dir          string
	useSecretRef bool
	dec          decryptFlags
	remote       remoteFlags
}

func newDiffCommand(kube *kubeFlags) *cobra.Command {
	f := &diffFlags{kube: kube}
	cmd := &cobra.Command{
		Use:               "diff [NAME | -f SYNC.yaml | --url URL | --dir DIR]",
		Short:             "Show how the cluster differs from git (exit 1 if it does)",
		Long:              diffLong,
		Example:           diffExample,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError(cmd, "unexpected arguments "+strings.Join(args[1:], " "))
			}
			if len(args) == 1 {
				f.name = args[0]
			}
			if msg := f.misuse(); msg != "" {
				return usageError(cmd, msg)
			}
			return runDiff(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "A Sync manifest (tether.dev/v1alpha1) file: diff its source, as the agent would apply it.")
	fl.StringVar(&f.url, "url", "", "The url of a git repository to diff, as a Sync's spec.source.url.")
	fl.StringVar(&f.branch, "ref", "", "The branch of --url to diff. Default: main.")
	fl.StringVar(&f.tag, "tag", "", "The tag of --url to diff.")
	fl.StringVar(&f.commit, "commit", "", "The commit of --url to diff, as a full SHA-1 hash.")
	fl.StringVar(&f.path, "path", "", "The directory inside the repository of --url. Default: its root.")
	fl.StringVar(&f.dir, "dir", "", "A local directory to diff, rendered as tether render does: check a change before pushing it.")
	f.dec.bind(fl)
	f.remote.bind(fl)
	fl.BoolVar(&f.useSecretRef, "use-secret-ref", false, "Read the credentials the Sync's spec.source.secretRef names, and the keys its spec.decryption.secretRef names, from the cluster, as the user of the command (or --as), to fetch and decrypt its repository.")
	kube.bind(cmd)
	return cmd
}

// runDiff runs `tether diff`. Every failure is returned as an *exitError with
// status 2, and a difference as errDiffFound, so that main exits 0, 1 or 2.
func runDiff(ctx context.Context, f *diffFlags, stdout, stderr io.Writer) error {
	differs, err := diff(ctx, f, stdout, stderr)
	switch {
	case err != nil:
		return &exitError{code: exitBroken, err: err}
	case differs:
		return errDiffFound
	}
	// Said on stderr, so that a pipeline reading the diff from stdout reads nothing.
	fmt.Fprintln(stderr, "tether: no differences: the cluster holds what git declares")
	return nil
}

// misuse says what is wrong with a command line, or "" when nothing is.
func (f *diffFlags) misuse() string {
	sources, refs := 0, 0
	for _, v := range []string{f.name, f.file, f.url, f.dir} {
		if v != "" {
			sources++
		}
	}
	for _, v := range []string{f.branch, f.tag, f.commit} {
		if v != "" {
			refs++
		}
	}
	switch {
	case sources != 1:
		return "give exactly one of NAME, -f, --url and --dir"
	case f.file != "" && f.kube.namespaceGiven():
		return "-f takes the namespace from the Sync's spec.destination; --namespace goes with NAME, --url or --dir"
	case f.url == "" && (refs > 0 || f.path != ""):
		return "--ref, --tag, --commit and --path go with --url"
	case refs > 1:
		return "give at most one of --ref, --tag and --commit"
	case f.useSecretRef && f.name == "" && f.file == "":
		return "--use-secret-ref goes with NAME or -f"
	}
	return f.dec.misuse()
}

// diff prints how the cluster differs from the desired state, and reports whether
// it does. Objects that fail the dry-run are returned as an error after the diffs
// of the others are printed.
func diff(ctx context.Context, f *diffFlags, stdout, stderr io.Writer) (bool, error) {
	c, m, err := newDiffManager(ctx, f.kube)
	if err != nil {
		return false, err
	}
	desired, err := desiredState(ctx, f, c, stderr)
	if err != nil {
		return false, err
	}
	if s := desired.sync; s != nil && s.Spec.Destination.IsRemote() {
		cfg, rc, err := f.remote.connect(ctx, c, s)
		if err != nil {
			return false, err
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return false, err
		}
		m = apply.NewManager(rc, apply.ManagerOptions{Discovery: dc})
	}
	return compare(ctx, m, desired, stdout)
}

// compare dry-runs the apply of d, prints the diff of each object that differs
// from the live cluster and, for a Sync, what it would prune, and reports whether
// anything differs: `tether diff` and `tether preview` alike.
func compare(ctx context.Context, m *apply.Manager, d *desired, w io.Writer) (bool, error) {
	cs, _ := m.ApplyAll(ctx, d.objects, d.opts) // its failures are in cs
	unvalidated := showInNewNamespaces(cs, d.objects)
	differs, err := printDiffs(w, cs, unvalidated)
	if err != nil {
		return differs, err
	}
	if d.sync != nil {
		pruned, err := diffPrunes(ctx, m, d, cs, w)
		differs = differs || pruned
		if err != nil {
			return differs, err
		}
	}
	return differs, failures(cs)
}

// failures joins the errors of the objects that could not be compared.
func failures(cs *apply.ChangeSet) error {
	var errs []error
	for _, c := range cs.Changes {
		if c.Action == apply.ActionFailed {
			errs = append(errs, c.Err)
		}
	}
	return errors.Join(errs...)
}

// showInNewNamespaces stands in for the dry-runs that the API server refuses only
// because the object's namespace does not exist yet, when the same apply would
// create it: a first diff of an app that brings its own namespace would otherwise
// fail. Such objects are shown created, as rendered, without the server's defaults
// or validation; the returned set names them.
func showInNewNamespaces(cs *apply.ChangeSet, objs []*unstructured.Unstructured) map[v1alpha1.ObjectRef]bool {
	created := map[string]bool{}
	for _, c := range cs.Changes {
		if c.Action == apply.ActionCreated && c.Object.Group == "" && c.Object.Kind == "Namespace" {
			created[c.Object.Name] = true
		}
	}
	rendered := map[v1alpha1.ObjectRef]*unstructured.Unstructured{}
	for _, o := range objs {
		rendered[apply.RefOf(o)] = o // ApplyAll gave it its namespace
	}
	unvalidated := map[v1alpha1.ObjectRef]bool{}
	for i, c := range cs.Changes {
		obj := rendered[c.Object]
		if c.Action == apply.ActionFailed && created[c.Object.Namespace] && apierrors.IsNotFound(c.Err) && obj != nil {
			cs.Changes[i] = apply.Change{Object: c.Object, Action: apply.ActionCreated, Desired: obj}
			unvalidated[c.Object] = true
		}
	}
	return unvalidated
}

// desired is the state `tether diff` compares the cluster with.
type desired struct {
	objects []*unstructured.Unstructured
	// opts are the options of the dry-run apply of objects.
	opts apply.Options
	// sync is the Sync whose source was rendered, if any; live is the same Sync as
	// the cluster holds it, if it does.
	sync, live *v1alpha1.Sync
}

func desiredState(ctx context.Context, f *diffFlags, c client.Client, stderr io.Writer) (*desired, error) {
	if f.file != "" || f.name != "" {
		return desiredOfSync(ctx, f, c, stderr)
	}
	ns, err := f.kube.namespace()
	if err != nil {
		return nil, err
	}
	dec, err := f.dec.decryption()
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	if f.dir != "" {
		objs, err = renderDir(ctx, f.dir, source.Helm{Namespace: ns}, source.DefaultOptions().RenderTimeout, dec)
		if err == nil {
			objs, err = plan.ManagedObjects(objs)
		}
	} else {
		ref := v1alpha1.GitRef{Branch: f.branch, Tag: f.tag, Commit: f.commit}
		objs, err = fetchAndRender(ctx, source.Request{URL: f.url, Ref: ref}, f.path, source.Directory{}, source.Helm{Namespace: ns}, dec, nil)
	}
	opts := apply.DefaultOptions()
	opts.DryRun, opts.DefaultNamespace = true, ns
	return &desired{objects: objs, opts: opts}, err
}

// desiredOfSync renders a Sync's source and maps it to an apply exactly as the
// agent would (plan.ForApply), so that a Sync the agent has converged shows
// no difference.
func desiredOfSync(ctx context.Context, f *diffFlags, c client.Client, stderr io.Writer) (*desired, error) {
	s, live, err := loadSync(ctx, f, c)
	if err != nil {
		return nil, err
	}
	cfg, err := f.kube.restConfig("diff")
	if err != nil {
		return nil, err
	}
	dec, err := f.dec.decryption()
	if err != nil {
		return nil, err
	}
	objs, err := renderSync(ctx, c, cfg, s, syncRendering{useSecretRef: f.useSecretRef, dec: dec, warn: stderr})
	if err != nil {
		return nil, err
	}
	return syncDesired(s, live, objs), nil
}

// syncRendering says how renderSync reads what a Sync's render needs.
type syncRendering struct {
	// useSecretRef reads the Secrets the Sync names (credentials, keys) as the
	// user; otherwise warn says what was not read.
	useSecretRef bool
	// dec decrypts SOPS files with keys given on the command line; nil for none.
	dec  *source.Decryption
	warn io.Writer
}

// renderSync fetches and renders a Sync's source as the agent would (its Helm
// values and the cluster's capabilities read through c and cfg, as the user)
// and returns the objects it manages: `tether diff` and the diff page of
// `tether ui` alike.
func renderSync(ctx context.Context, c client.Client, cfg *rest.Config, s *v1alpha1.Sync, how syncRendering) ([]*unstructured.Unstructured, error) {
	req := plan.RequestOf(s)
	var err error
	switch {
	case s.Spec.Source.SecretRef != nil && how.useSecretRef:
		if req.Auth, err = tethersync.ReadSourceAuth(ctx, c, s); err != nil {
			return nil, fmt.Errorf("spec.source.secretRef: %w", err)
		}
	case s.Spec.Source.SecretRef != nil && s.Spec.Source.Chart != nil:
		fmt.Fprintln(how.warn, "tether diff: spec.source.secretRef is not read without --use-secret-ref")
	case s.Spec.Source.SecretRef != nil:
		fmt.Fprintf(how.warn, "tether diff: spec.source.secretRef is not read without --use-secret-ref; give credentials in the URL if %s needs them\n", source.RedactURL(s.Spec.Source.URL))
	}
	if req.Verify, err = tethersync.ReadVerification(ctx, c, s); err != nil {
		// The agent would keep the revision it applied last; the diff goes on
		// unverified, and says so.
		fmt.Fprintf(how.warn, "tether diff: the revision is not verified: %v\n", err)
	}
	helm, err := helmOfSync(ctx, cfg, c, s)
	if err != nil {
		return nil, err
	}
	dec := how.dec
	switch {
	case dec != nil || s.Spec.Decryption == nil:
	case how.useSecretRef:
		if dec, err = tethersync.ReadDecryption(ctx, c, s); err != nil {
			return nil, fmt.Errorf("spec.decryption.secretRef: %w", err)
		}
	default:
		fmt.Fprintln(how.warn, "tether diff: the Sync decrypts SOPS files (spec.decryption); they are compared encrypted without --use-secret-ref or --decrypt --keys DIR")
	}
	var objs []*unstructured.Unstructured
	switch {
	case s.Spec.Source.Chart != nil:
		chart := plan.ChartRequestOf(s)
		chart.Auth = req.Auth
		objs, err = fetchAndRenderChart(ctx, chart, helm, s.Spec.Kustomize)
	case s.Spec.Source.OCI != nil:
		art, skipped, rerr := tethersync.ReadArtifactRequest(ctx, c, s, how.useSecretRef)
		for _, field := range skipped {
			fmt.Fprintf(how.warn, "tether diff: %s is not read without --use-secret-ref\n", field)
		}
		if rerr != nil {
			// As for spec.source.verify: the diff goes on unverified, and says so.
			fmt.Fprintf(how.warn, "tether diff: the artifact is not verified: %v\n", rerr)
			art.Keys = nil
		}
		objs, err = fetchAndRenderArtifact(ctx, art, s.Spec.Source.PathOrDefault(), source.DirectoryOf(s.Spec.Source.Directory), helm, dec, s.Spec.Kustomize)
	default:
		objs, err = fetchAndRender(ctx, req, s.Spec.Source.PathOrDefault(), source.DirectoryOf(s.Spec.Source.Directory), helm, dec, s.Spec.Kustomize)
	}
	if err != nil {
		return nil, err
	}
	// spec.postBuild's variables, read as the user, as the agent substitutes them.
	snap, err := tethersync.Substitute(ctx, c, s, &source.Snapshot{Path: s.Spec.Source.PathOrDefault(), Objects: objs}, func(snap *source.Snapshot, sub source.Substitution) (*source.Snapshot, error) {
		return source.Substitute(snap, sub, source.DefaultOptions())
	})
	if err != nil {
		return nil, err
	}
	return snap.Objects, nil
}

// syncDesired maps objs, rendered from s's source, to the dry-run apply the agent
// would make of them (plan.ForApply), with the fields the Sync in the cluster
// (live, nil when none) gave up.
func syncDesired(s, live *v1alpha1.Sync, objs []*unstructured.Unstructured) *desired {
	var givenUp []v1alpha1.GivenUpField
	if live != nil {
		givenUp = live.Status.FieldsGivenUp
	}
	opts := plan.ForApply(s, objs, apply.DefaultOptions(), givenUp)
	opts.DryRun = true
	return &desired{objects: objs, opts: opts, sync: s, live: live}
}

// helmOfSync says how the Sync's chart renders, as the agent says it
// (tethersync.HelmFor), its valuesFrom read as the user and the cluster's
// capabilities read from the cluster.
func helmOfSync(ctx context.Context, cfg *rest.Config, c client.Client, s *v1alpha1.Sync) (source.Helm, error) {
	caps, err := tethersync.ClusterCapabilities(cfg)
	if err != nil {
		return source.Helm{}, err
	}
	return tethersync.HelmFor(ctx, c, s, caps)
}

// loadSync returns the Sync to diff, from the cluster (NAME) or a manifest (-f),
// and the same Sync as the cluster holds it, or nil when it holds none.
func loadSync(ctx context.Context, f *diffFlags, c client.Client) (s, live *v1alpha1.Sync, err error) {
	ns, err := f.kube.namespace()
	if err != nil {
		return nil, nil, err
	}
	if f.name != "" {
		live, err := getSync(ctx, c, ns, f.name)
		return live, live, err
	}
	if s, err = readSyncFile(f.file); err != nil {
		return nil, nil, err
	}
	if s.Namespace == "" {
		s.Namespace = ns // kubectl apply -f would create the Sync there
	}
	live = &v1alpha1.Sync{}
	err = c.Get(ctx, client.ObjectKeyFromObject(s), live)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apimeta.IsNoMatchError(err) || discovery.IsGroupDiscoveryFailedError(err):
		// Not created yet, not readable, or Tether not installed yet.
		return s, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading Sync %s/%s: %w", s.Namespace, s.Name, err)
	}
	return s, live, nil
}

// readSyncFile reads a manifest that holds one Sync.
func readSyncFile(file string) (*v1alpha1.Sync, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	objs, err := source.DecodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(objs) != 1 || objs[0].GroupVersionKind() != v1alpha1.GroupVersion.WithKind("Sync") {
		return nil, fmt.Errorf("%s: want one %s Sync, found %d objects", file, v1alpha1.GroupVersion, len(objs))
	}
	s := &v1alpha1.Sync{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sources := 0
	for _, set := range []bool{s.Spec.Source.URL != "", s.Spec.Source.Chart != nil, s.Spec.Source.OCI != nil} {
		if set {
			sources++
		}
	}
	if s.Name == "" || sources != 1 {
		return nil, fmt.Errorf("%s: the Sync needs metadata.name and one of spec.source.url, spec.source.chart and spec.source.oci", file)
	}
	return s, nil
}

// throwAwaySource is a Source over a cache of its own, and what removes it.
func throwAwaySource() (*source.Source, func(), error) {
	cacheDir, err := os.MkdirTemp("", "tether-diff-")
	if err != nil {
		return nil, nil, err
	}
	done := func() { _ = os.RemoveAll(cacheDir) }
	opts := source.DefaultOptions()
	opts.CacheDir = cacheDir
	// The CLI runs as its user on their own machine: a file:// repository reads
	// nothing they could not read anyway. Only the agent refuses them by default.
	opts.AllowFileURLs = true
	src, err := source.New(opts)
	if err != nil {
		done()
		return nil, nil, err
	}
	return src, done, nil
}

// fetchAndRenderChart fetches a packaged chart's newest matching version and
// renders it as helm says, as the agent does (source.FetchChart and
// RenderChart).
func fetchAndRenderChart(ctx context.Context, req source.ChartRequest, helm source.Helm, kust *v1alpha1.Kustomize) ([]*unstructured.Unstructured, error) {
	objs, err := renderPackagedChart(ctx, req, helm)
	if err != nil {
		return nil, err
	}
	// spec.kustomize on every object, hooks included, as the agent puts it.
	snap, err := source.Overlay(&source.Snapshot{Path: req.Name, Objects: objs}, kust, source.DefaultOptions())
	if err != nil {
		return nil, err
	}
	return plan.ManagedObjects(snap.Objects)
}

// renderPackagedChart fetches a packaged chart into a throw-away cache and
// renders it by the agent's path (Source.FetchChart, RenderChart): every
// object, hooks included.
func renderPackagedChart(ctx context.Context, req source.ChartRequest, helm source.Helm) ([]*unstructured.Unstructured, error) {
	src, done, err := throwAwaySource()
	if err != nil {
		return nil, err
	}
	defer done()
	rev, err := src.FetchChart(ctx, req)
	if err != nil {
		return nil, err
	}
	snap, err := src.RenderChart(ctx, rev, helm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rev, err)
	}
	return snap.Objects, nil
}

// fetchAndRender fetches one revision into a throw-away cache, renders what
// sel selects of path and puts kust (spec.kustomize; nil for none) on top, as
// the agent does.
func fetchAndRender(ctx context.Context, req source.Request, path string, sel source.Directory, helm source.Helm, dec *source.Decryption, kust *v1alpha1.Kustomize) ([]*unstructured.Unstructured, error) {
	return renderFetched(ctx, func(src *source.Source) (source.Revision, error) { return src.Fetch(ctx, req) }, path, sel, helm, dec, kust)
}

// fetchAndRenderArtifact is fetchAndRender of an OCI artifact (its signature
// checked when req has keys).
func fetchAndRenderArtifact(ctx context.Context, req source.ArtifactRequest, path string, sel source.Directory, helm source.Helm, dec *source.Decryption, kust *v1alpha1.Kustomize) ([]*unstructured.Unstructured, error) {
	return renderFetched(ctx, func(src *source.Source) (source.Revision, error) { return src.FetchArtifact(ctx, req) }, path, sel, helm, dec, kust)
}

// renderFetched fetches a revision with fetch into a throw-away cache and
// renders it as fetchAndRender says.
func renderFetched(ctx context.Context, fetch func(*source.Source) (source.Revision, error), path string, sel source.Directory, helm source.Helm, dec *source.Decryption, kust *v1alpha1.Kustomize) ([]*unstructured.Unstructured, error) {
	src, done, err := throwAwaySource()
	if err != nil {
		return nil, err
	}
	defer done()
	rev, err := fetch(src)
	if err != nil {
		return nil, err
	}
	snap, err := src.RenderSelected(ctx, rev, path, sel, helm, dec)
	if err == nil {
		snap, err = src.Overlay(snap, kust)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rev, err)
	}
	// Hooks run once per revision applied and are not kept in sync: no diff.
	return plan.ManagedObjects(snap.Objects)
}

// newDiffManager connects to the cluster. One request up front turns an
// unreachable cluster into one error, rather than one per object.
func newDiffManager(ctx context.Context, kube *kubeFlags) (client.Client, *apply.Manager, error) {
	cfg, err := kube.restConfig("diff")
	if err != nil {
		return nil, nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return nil, nil, fmt.Errorf("reaching the cluster at %s: %w", cfg.Host, err)
	}
	// Uncached: every comparison needs the live object as it is now.
	c, err := kube.client("diff")
	if err != nil {
		return nil, nil, err
	}
	return c, apply.NewManager(c, apply.ManagerOptions{Discovery: dc}), nil
}

// printDiffs writes a unified diff of each object the dry-run found missing or
// different, and reports whether there was one. Objects in unvalidated get a note
// that the server has not seen them.
func printDiffs(w io.Writer, cs *apply.ChangeSet, unvalidated map[v1alpha1.ObjectRef]bool) (bool, error) {
	differs := false
	for _, c := range cs.Changes {
		if c.Action != apply.ActionCreated && c.Action != apply.ActionConfigured {
			continue
		}
		differs = true
		text, err := plan.ObjectDiff(c)
		if err != nil {
			return differs, fmt.Errorf("%s: %w", c.Object, err)
		}
		if unvalidated[c.Object] {
			text = fmt.Sprintf("# namespace %s does not exist yet: shown as rendered, not validated by the API server\n%s", c.Object.Namespace, text)
		}
		if _, err := fmt.Fprintf(w, "diff %s (%s)\n%s", c.Object, c.Action, text); err != nil {
			return differs, err
		}
	}
	return differs, nil
}

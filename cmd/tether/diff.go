package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
)

// errDiffFound is what `tether diff` returns when the cluster differs from the
// desired state: the diffs are printed already, and the command exits 1.
var errDiffFound = errors.New("the cluster differs from the desired state")

// diffExitError is the exit status of every failure of `tether diff`; 1 is taken
// by "differs", so that CI can tell a drifted cluster from a broken pipeline.
const diffExitError = 2

// diffContext is how many unchanged lines surround each change, as in diff -u.
const diffContext = 3

const diffUsage = `Usage:
  tether diff -f SYNC.yaml [--kubeconfig PATH] [--context NAME] [--as USER]
  tether diff --url URL [--ref BRANCH | --tag TAG | --commit SHA] [--path DIR] [-n NAMESPACE]
  tether diff --dir DIR [-n NAMESPACE]

Compares what a Sync, a git repository or a local directory renders to with the
live cluster, through a server-side dry-run of the apply Tether would make, and
prints a unified YAML diff of each object that differs. Secret values are never
printed, only whether they changed. Nothing is written to the cluster.

Exit status: 0 nothing differs, 1 something differs, 2 error.

Flags:
`

// diffFlags are the command line of `tether diff`. Exactly one of file, url and
// dir says where the desired state comes from.
type diffFlags struct {
	file       string
	url        string
	branch     string
	tag        string
	commit     string
	path       string
	dir        string
	namespace  string
	kubeconfig string
	context    string
	as         string
}

// runDiff runs `tether diff`. Every failure is returned as an *exitError with
// status 2, and a difference as errDiffFound, so that main exits 0, 1 or 2.
func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseDiffFlags(args, stderr)
	if err != nil {
		return &exitError{code: diffExitError, err: err}
	}
	differs, err := diff(ctx, f, stdout, stderr)
	switch {
	case err != nil:
		return &exitError{code: diffExitError, err: err}
	case differs:
		return errDiffFound
	}
	return nil
}

func parseDiffFlags(args []string, stderr io.Writer) (*diffFlags, error) {
	f := &diffFlags{}
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, diffUsage)
		fs.PrintDefaults()
	}
	for _, name := range []string{"f", "filename"} {
		fs.StringVar(&f.file, name, "", "A Sync manifest (tether.dev/v1alpha1) `file`: diff its source, as the agent would apply it.")
	}
	fs.StringVar(&f.url, "url", "", "The `url` of a git repository to diff, as a Sync's spec.source.url.")
	fs.StringVar(&f.branch, "ref", "", "The `branch` of --url to diff. Default: main.")
	fs.StringVar(&f.tag, "tag", "", "The `tag` of --url to diff.")
	fs.StringVar(&f.commit, "commit", "", "The commit of --url to diff, as a full SHA-1 `hash`.")
	fs.StringVar(&f.path, "path", "", "The `directory` inside the repository of --url. Default: its root.")
	fs.StringVar(&f.dir, "dir", "", "A local `directory` to diff, rendered as tether render does: check a change before pushing it.")
	for _, name := range []string{"n", "namespace"} {
		fs.StringVar(&f.namespace, name, "", "The `namespace` of namespaced objects that name none (--url, --dir). Default: the kubeconfig context's.")
	}
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "The `path` of a kubeconfig. Default: $KUBECONFIG, then ~/.kube/config, then in-cluster.")
	fs.StringVar(&f.context, "context", "", "The kubeconfig context to use, by `name`. Default: the current context.")
	fs.StringVar(&f.as, "as", "", "Impersonate this `user` for every request, as the agent does for a Sync with an account: system:serviceaccount:<namespace>:<name> shows what that account may apply.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		// The flag package has printed the error and the usage.
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if msg := f.misuse(fs.Args()); msg != "" {
		fmt.Fprintf(stderr, "tether diff: %s\n\n", msg)
		fs.Usage()
		return nil, fmt.Errorf("%w: %s", errUsage, msg)
	}
	return f, nil
}

// misuse says what is wrong with a command line, or "" when nothing is.
func (f *diffFlags) misuse(args []string) string {
	sources, refs := 0, 0
	for _, v := range []string{f.file, f.url, f.dir} {
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
	case len(args) > 0:
		return fmt.Sprintf("unexpected arguments %v", args)
	case sources != 1:
		return "give exactly one of -f, --url and --dir"
	case f.file != "" && f.namespace != "":
		return "-f takes the namespace from the Sync's spec.destination; --namespace goes with --url or --dir"
	case f.url == "" && (refs > 0 || f.path != ""):
		return "--ref, --tag, --commit and --path go with --url"
	case refs > 1:
		return "give at most one of --ref, --tag and --commit"
	}
	return ""
}

func (f *diffFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	overrides.AuthInfo.Impersonate = f.as
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// diff prints how the cluster differs from the desired state, and reports whether
// it does. Objects that fail the dry-run are returned as an error after the diffs
// of the others are printed.
func diff(ctx context.Context, f *diffFlags, stdout, stderr io.Writer) (bool, error) {
	cc := f.clientConfig()
	desired, err := desiredState(ctx, f, cc, stderr)
	if err != nil {
		return false, err
	}
	m, err := newDiffManager(ctx, cc)
	if err != nil {
		return false, err
	}
	opts := apply.DefaultOptions()
	opts.DryRun = true
	opts.DefaultNamespace = desired.namespace
	cs, _ := m.ApplyAll(ctx, desired.objects, opts) // its failures are in cs
	unvalidated := showInNewNamespaces(cs, desired.objects)
	differs, err := printDiffs(stdout, cs, unvalidated)
	if err != nil {
		return differs, err
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
func showInNewNamespaces(cs *apply.ChangeSet, objs []*unstructured.Unstructured) map[apply.ObjectRef]bool {
	created := map[string]bool{}
	for _, c := range cs.Changes {
		if c.Action == apply.ActionCreated && c.Object.Group == "" && c.Object.Kind == "Namespace" {
			created[c.Object.Name] = true
		}
	}
	rendered := map[apply.ObjectRef]*unstructured.Unstructured{}
	for _, o := range objs {
		rendered[apply.RefOf(o)] = o // ApplyAll gave it its namespace
	}
	unvalidated := map[apply.ObjectRef]bool{}
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
	// namespace is given to namespaced objects that name none.
	namespace string
}

func desiredState(ctx context.Context, f *diffFlags, cc clientcmd.ClientConfig, stderr io.Writer) (*desired, error) {
	if f.file != "" {
		return desiredOfSync(ctx, f.file, cc, stderr)
	}
	ns, err := f.defaultNamespace(cc)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	if f.dir != "" {
		objs, err = renderDir(f.dir)
	} else {
		ref := v1alpha1.GitRef{Branch: f.branch, Tag: f.tag, Commit: f.commit}
		objs, err = fetchAndRender(ctx, source.Request{URL: f.url, Ref: ref}, f.path)
	}
	return &desired{objects: objs, namespace: ns}, err
}

// defaultNamespace is --namespace, or else the kubeconfig context's namespace, as
// kubectl apply would use.
func (f *diffFlags) defaultNamespace(cc clientcmd.ClientConfig) (string, error) {
	if f.namespace != "" {
		return f.namespace, nil
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

// desiredOfSync renders a Sync's source exactly as the agent would apply it: into
// the Sync's destination namespace, and marked as owned by the Sync, so that a
// Sync the agent has converged shows no difference.
func desiredOfSync(ctx context.Context, file string, cc clientcmd.ClientConfig, stderr io.Writer) (*desired, error) {
	s, err := loadSync(file)
	if err != nil {
		return nil, err
	}
	if s.Namespace == "" {
		// kubectl apply -f would create the Sync in the context's namespace.
		if s.Namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
	}
	if s.Spec.Source.SecretRef != nil {
		fmt.Fprintf(stderr, "tether diff: spec.source.secretRef is not read; give credentials in the URL if %s needs them\n", source.RedactURL(s.Spec.Source.URL))
	}
	req := source.Request{URL: s.Spec.Source.URL, Ref: s.Spec.Source.Ref}
	objs, err := fetchAndRender(ctx, req, s.Spec.Source.PathOrDefault())
	if err != nil {
		return nil, err
	}
	tethersync.MarkOwned(objs, s)
	return &desired{objects: objs, namespace: s.Spec.Destination.Namespace}, nil
}

// loadSync reads a manifest that holds one Sync.
func loadSync(file string) (*v1alpha1.Sync, error) {
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
	if s.Name == "" || s.Spec.Source.URL == "" {
		return nil, fmt.Errorf("%s: the Sync needs metadata.name and spec.source.url", file)
	}
	return s, nil
}

// fetchAndRender fetches one revision into a throw-away cache and renders path.
func fetchAndRender(ctx context.Context, req source.Request, path string) ([]*unstructured.Unstructured, error) {
	cacheDir, err := os.MkdirTemp("", "tether-diff-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cacheDir)
	opts := source.DefaultOptions()
	opts.CacheDir = cacheDir
	// The CLI runs as its user on their own machine: a file:// repository reads
	// nothing they could not read anyway. Only the agent refuses them by default.
	opts.AllowFileURLs = true
	src, err := source.New(opts)
	if err != nil {
		return nil, err
	}
	rev, err := src.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	snap, err := src.Render(ctx, rev, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rev, err)
	}
	return snap.Objects, nil
}

// renderDir renders a directory on disk as `tether render` does, naming files in
// errors relative to the working directory.
func renderDir(dir string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return source.Render(filesys.MakeFsOnDisk(), cwd, abs, source.RenderOptions{MaxObjects: source.DefaultOptions().MaxObjects})
}

// newDiffManager connects to the cluster. One request up front turns an
// unreachable cluster into one error, rather than one per object.
func newDiffManager(ctx context.Context, cc clientcmd.ClientConfig) (*apply.Manager, error) {
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	// Two requests per object (read, dry-run); client-go's default of 5 per second
	// would make a diff of a few hundred objects take minutes.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "tether-diff/" + version
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return nil, fmt.Errorf("reaching the cluster at %s: %w", cfg.Host, err)
	}
	// Uncached: every comparison needs the live object as it is now.
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return apply.NewManager(c, apply.ManagerOptions{}), nil
}

// printDiffs writes a unified diff of each object the dry-run found missing or
// different, and reports whether there was one. Objects in unvalidated get a note
// that the server has not seen them.
func printDiffs(w io.Writer, cs *apply.ChangeSet, unvalidated map[apply.ObjectRef]bool) (bool, error) {
	differs := false
	for _, c := range cs.Changes {
		if c.Action != apply.ActionCreated && c.Action != apply.ActionConfigured {
			continue
		}
		differs = true
		text, err := objectDiff(c)
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

// objectDiff is the unified diff of one change, from the live object (none when it
// is missing) to the dry-run of the apply, both without the fields the comparison
// ignores.
func objectDiff(c apply.Change) (string, error) {
	if c.Desired == nil {
		// An immutable field that the object lets Tether delete and recreate: the
		// dry-run was refused, so there is no desired object to show.
		return "# " + strings.Join(c.Diff, "\n# ") + "\n", nil
	}
	var live *unstructured.Unstructured
	if c.Live != nil {
		live = apply.Normalize(c.Live)
	}
	desired := apply.Normalize(c.Desired)
	if c.Object.Group == "" && c.Object.Kind == "Secret" {
		maskSecret(live, desired)
	}
	a, err := yamlLines(live)
	if err != nil {
		return "", err
	}
	b, err := yamlLines(desired)
	if err != nil {
		return "", err
	}
	return unifiedDiff("live", "desired", a, b, diffContext), nil
}

// yamlLines writes obj as YAML with sorted keys, one string per line; nil is empty.
func yamlLines(obj *unstructured.Unstructured) ([]string, error) {
	if obj == nil {
		return nil, nil
	}
	out, err := encodeYAML([]*unstructured.Unstructured{obj})
	if err != nil {
		return nil, err
	}
	return strings.SplitAfter(string(out), "\n")[:strings.Count(string(out), "\n")], nil
}

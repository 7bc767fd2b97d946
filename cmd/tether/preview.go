package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
)

const previewLong = `Show what a change to a repository (a pull request: its base and head) would
change in the cluster, Sync by Sync, for a CI job to post as a comment.

--repo is a local clone holding both commits (as a CI job checks one out). The
Syncs that follow this repository (spec.source.url names one of its remotes, in
any form: https, ssh, scp-like, with or without .git) are found in the cluster
(every namespace, or -n's), or read from -f files. Each is rendered at --base
and at --head exactly as the agent renders a commit (spec.source.directory,
spec.kustomize and spec.postBuild included); a Sync whose render is the
same at both is untouched and not shown. For every other Sync the head render
is compared with the live cluster as tether diff compares it: a server-side
dry-run of the apply the agent would make (its destination, ignore rules and
the fields it gave up), as the Sync's spec.serviceAccountName when it names one
(the user of the command must be allowed to impersonate it), Secret values
masked, and what it would prune. --offline compares the two renders instead,
with no cluster (Syncs from -f).

--output markdown writes a pull-request comment, one collapsed section per
Sync, bounded in size; --output json one object for a program.

Exit status: 0 no Sync changes, 1 some do, 2 error.`

const previewExample = `  # In a pull request's job, against the cluster the Syncs run in
  tether preview --repo . --base origin/main --head HEAD --output markdown > comment.md

  # Without a cluster, from the Sync manifests
  tether preview --repo . --base origin/main --head HEAD --offline -f clusters/prod/web.yaml`

// previewFlags are the command line of `tether preview`.
type previewFlags struct {
	kube       *kubeFlags
	repo       string
	base, head string
	output     string
	offline    bool
	files      []string
}

func newPreviewCommand(kube *kubeFlags) *cobra.Command {
	f := &previewFlags{kube: kube}
	cmd := &cobra.Command{
		Use:     "preview --repo DIR --base REF --head REF",
		Short:   "Show what a pull request would change in the cluster, per Sync (exit 1 if anything)",
		Long:    previewLong,
		Example: previewExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case f.base == "" || f.head == "":
				return usageError(cmd, "--base and --head are required")
			case f.output != "text" && f.output != "markdown" && f.output != "json":
				return usageError(cmd, fmt.Sprintf("--output %q: want text, markdown or json", f.output))
			case f.offline && len(f.files) == 0:
				return usageError(cmd, "--offline reads the Syncs from -f files")
			}
			return runPreview(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", ".", "A local clone of the repository, holding both commits.")
	fl.StringVar(&f.base, "base", "", "The commit the change starts from (a branch, tag, hash or expression).")
	fl.StringVar(&f.head, "head", "", "The commit of the change.")
	fl.StringVarP(&f.output, "output", "o", "text", "Output format: text, markdown (a pull-request comment) or json.")
	fl.BoolVar(&f.offline, "offline", false, "Compare the base and head renders, with no cluster (Syncs from -f).")
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "A Sync manifest file, instead of the Syncs in the cluster (repeatable).")
	kube.bind(cmd)
	return cmd
}

// syncPreview is what a change does to one Sync.
type syncPreview struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	// Changed is whether its render differs between base and head.
	Changed bool `json:"changed"`
	// Diff is the diff of head against the live cluster (or base, offline).
	Diff string `json:"diff,omitempty"`
	// Error is why it could not be previewed.
	Error string `json:"error,omitempty"`
}

// previewReport is the outcome of a preview.
type previewReport struct {
	Base  string        `json:"base"`
	Head  string        `json:"head"`
	Syncs []syncPreview `json:"syncs"`
}

func runPreview(ctx context.Context, f *previewFlags, stdout, stderr io.Writer) error {
	report, err := preview(ctx, f, stderr)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	if err := writePreview(stdout, f.output, report); err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	var errs []error
	changed := false
	for _, p := range report.Syncs {
		changed = changed || p.Changed
		if p.Error != "" {
			errs = append(errs, fmt.Errorf("previewing Sync %s/%s: %s", p.Namespace, p.Name, p.Error))
		}
	}
	switch {
	case len(errs) > 0:
		return &exitError{code: exitBroken, err: errors.Join(errs...)}
	case changed:
		return errDiffFound
	}
	fmt.Fprintln(stderr, "tether: the change touches no Sync of this repository")
	return nil
}

// preview renders every Sync of the repository at base and head, and diffs
// those whose render changed.
func preview(ctx context.Context, f *previewFlags, stderr io.Writer) (*previewReport, error) {
	co, err := source.OpenCheckout(f.repo, source.DefaultOptions())
	if err != nil {
		return nil, err
	}
	report := &previewReport{}
	if report.Base, err = co.Resolve(f.base); err != nil {
		return nil, err
	}
	if report.Head, err = co.Resolve(f.head); err != nil {
		return nil, err
	}
	syncs, live, err := f.syncs(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := repositoryKeys(co, f.repo)
	if err != nil {
		return nil, err
	}
	for _, s := range syncs {
		if !keys[repositoryKey(s.Spec.Source.URL)] {
			continue
		}
		p := syncPreview{Namespace: s.Namespace, Name: s.Name, Path: s.Spec.Source.PathOrDefault()}
		if err := f.previewSync(ctx, co, report, s, live[client.ObjectKeyFromObject(s)], &p); err != nil {
			p.Error = err.Error()
		}
		report.Syncs = append(report.Syncs, p)
	}
	if len(report.Syncs) == 0 {
		fmt.Fprintf(stderr, "tether preview: no Sync follows this repository (its remotes: %s)\n", strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
	}
	return report, nil
}

// previewSync fills p: whether s's render changed from base to head, and how
// head differs from the cluster (or from base, offline).
func (f *previewFlags) previewSync(ctx context.Context, co *source.Checkout, r *previewReport, s, live *v1alpha1.Sync, p *syncPreview) error {
	helm, reader, err := f.helmOf(ctx, s)
	if err != nil {
		return err
	}
	base, err := renderAt(ctx, co, r.Base, s, helm, reader)
	if err != nil {
		return fmt.Errorf("rendering %s at the base %.12s: %w", p.Path, r.Base, err)
	}
	head, err := renderAt(ctx, co, r.Head, s, helm, reader)
	if err != nil {
		return fmt.Errorf("rendering %s at the head %.12s: %w", p.Path, r.Head, err)
	}
	if p.Changed = !sameObjects(base, head); !p.Changed {
		return nil
	}
	var out bytes.Buffer
	if f.offline {
		err = diffRenders(&out, base, head)
	} else {
		err = f.diffLive(ctx, &out, s, live, head)
	}
	p.Diff = out.String()
	return err
}

// renderAt renders s's path at commit as the agent renders a revision: what
// spec.source.directory selects (a chart as helm says), spec.kustomize on top,
// then spec.postBuild's variables, read through reader (nil offline: a Sync
// whose substituteFrom names objects fails, saying so; inline values are
// substituted).
func renderAt(ctx context.Context, co *source.Checkout, commit string, s *v1alpha1.Sync, helm source.Helm, reader client.Reader) ([]*unstructured.Unstructured, error) {
	path := s.Spec.Source.PathOrDefault()
	objs, err := co.Render(ctx, commit, path, source.DirectoryOf(s.Spec.Source.Directory), helm, s.Spec.Kustomize)
	if err != nil || s.Spec.PostBuild == nil {
		return objs, err
	}
	if reader == nil && len(s.Spec.PostBuild.SubstituteFrom) > 0 {
		return nil, fmt.Errorf("spec.postBuild.substituteFrom names objects of the cluster (%s/%s first), which --offline does not read", s.Spec.PostBuild.SubstituteFrom[0].Kind, s.Spec.PostBuild.SubstituteFrom[0].Name)
	}
	snap, err := tethersync.Substitute(ctx, reader, s, &source.Snapshot{Path: path, Objects: objs}, func(snap *source.Snapshot, sub source.Substitution) (*source.Snapshot, error) {
		return source.Substitute(snap, sub, source.DefaultOptions())
	})
	if err != nil {
		return nil, err
	}
	return snap.Objects, nil
}

// helmOf says how s's path renders if it holds a chart, as the agent says it
// (tethersync.HelmFor): against the cluster, its valuesFrom read as the user and
// the cluster's capabilities; offline, with no valuesFrom (a Sync naming some
// fails, saying which) and Helm's default capabilities. It returns the
// cluster's client too (nil offline), for spec.postBuild's variables.
func (f *previewFlags) helmOf(ctx context.Context, s *v1alpha1.Sync) (source.Helm, client.Reader, error) {
	if f.offline {
		helm, err := tethersync.HelmFor(ctx, nil, s, nil)
		return helm, nil, err
	}
	cfg, err := f.kube.restConfig("preview")
	if err != nil {
		return source.Helm{}, nil, err
	}
	c, err := clientFor(cfg)
	if err != nil {
		return source.Helm{}, nil, err
	}
	helm, err := helmOfSync(ctx, cfg, c, s)
	return helm, c, err
}

// diffLive writes how the cluster differs from head as s would apply it: the
// dry-run and prune of `tether diff`, as s's service account if it names one.
// Hooks are left out, as the agent keeps only the other objects applied.
func (f *previewFlags) diffLive(ctx context.Context, w io.Writer, s, live *v1alpha1.Sync, head []*unstructured.Unstructured) error {
	head, err := plan.ManagedObjects(head)
	if err != nil {
		return err
	}
	m, err := f.managerFor(s)
	if err != nil {
		return err
	}
	differs, err := compare(ctx, m, syncDesired(s, live, head), w)
	if err == nil && !differs {
		fmt.Fprintln(w, "# the render changed, and the cluster already holds it")
	}
	return err
}

// managerFor connects as the identity s acts as: its service account (unless
// --as names another), or the user of the command.
func (f *previewFlags) managerFor(s *v1alpha1.Sync) (*apply.Manager, error) {
	cfg, err := f.kube.restConfig("preview")
	if err != nil {
		return nil, err
	}
	if s.Spec.ServiceAccountName != "" && cfg.Impersonate.UserName == "" {
		cfg = rest.CopyConfig(cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: tethersync.ServiceAccountUser(s.Namespace, s.Spec.ServiceAccountName)}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c, err := clientFor(cfg)
	if err != nil {
		return nil, err
	}
	return apply.NewManager(c, apply.ManagerOptions{Discovery: dc}), nil
}

// syncs returns the Syncs to preview, from -f files or the cluster, and the
// Syncs the cluster holds by key (for their inventory and given-up fields).
func (f *previewFlags) syncs(ctx context.Context) ([]*v1alpha1.Sync, map[client.ObjectKey]*v1alpha1.Sync, error) {
	live := map[client.ObjectKey]*v1alpha1.Sync{}
	var out []*v1alpha1.Sync
	if len(f.files) > 0 {
		ns, err := f.kube.namespace()
		if err != nil {
			return nil, nil, err
		}
		for _, file := range f.files {
			s, err := readSyncFile(file)
			if err != nil {
				return nil, nil, err
			}
			if s.Namespace == "" {
				s.Namespace = ns
			}
			out = append(out, s)
		}
		if f.offline {
			return out, live, nil
		}
	}
	c, err := f.kube.client("preview")
	if err != nil {
		return nil, nil, err
	}
	var opts []client.ListOption
	if f.kube.namespaceGiven() {
		ns, err := f.kube.namespace()
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, client.InNamespace(ns))
	}
	list := &v1alpha1.SyncList{}
	if err := c.List(ctx, list, opts...); err != nil && len(f.files) == 0 {
		return nil, nil, fmt.Errorf("listing Syncs: %w", err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		live[client.ObjectKeyFromObject(s)] = s
		if len(f.files) == 0 {
			out = append(out, s)
		}
	}
	return out, live, nil
}

// repositoryKeys are the keys (repositoryKey) of the repository's remotes and of
// the repository itself (a file:// URL naming it).
func repositoryKeys(co *source.Checkout, dir string) (map[string]bool, error) {
	urls, err := co.RemoteURLs()
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		urls = append(urls, abs)
	}
	keys := map[string]bool{}
	for _, u := range urls {
		keys[repositoryKey(u)] = true
	}
	return keys, nil
}

// repositoryKey names a repository whatever the form of its URL: host and path,
// without scheme, credentials, port, ".git" or a trailing slash, so that
// https://host/org/repo.git, ssh://git@host/org/repo and git@host:org/repo are
// one repository. A local path (or file:// URL) is its cleaned path.
func repositoryKey(raw string) string {
	raw = strings.TrimSpace(raw)
	var host, path string
	switch u, err := url.Parse(raw); {
	case err == nil && u.Scheme == "file":
		path = u.Path
	case err == nil && u.Scheme != "" && u.Host != "":
		host, path = u.Hostname(), u.Path
	case strings.HasPrefix(raw, "/"):
		path = raw
	default:
		// scp-like: [user@]host:path
		if at := strings.Index(raw, "@"); at >= 0 {
			raw = raw[at+1:]
		}
		host, path, _ = strings.Cut(raw, ":")
	}
	if host == "" {
		path = filepath.Clean(path)
	}
	path = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), ".git")
	return strings.ToLower(host) + "/" + path
}

// sameObjects reports whether two renders hold the same objects, whatever their
// order.
func sameObjects(a, b []*unstructured.Unstructured) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.Equal(canonical(a), canonical(b))
}

func canonical(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		data, err := json.Marshal(o.Object) // map keys sorted
		if err != nil {
			data = []byte(fmt.Sprint(o.Object))
		}
		out = append(out, string(data))
	}
	slices.Sort(out)
	return out
}

// diffRenders writes the diff of each object from base to head, as tether diff
// writes one (Secret values masked), and the objects head no longer holds.
func diffRenders(w io.Writer, base, head []*unstructured.Unstructured) error {
	before := map[v1alpha1.ObjectRef]*unstructured.Unstructured{}
	for _, o := range base {
		before[apply.RefOf(o)] = o
	}
	cs := &apply.ChangeSet{}
	for _, o := range head {
		ref := apply.RefOf(o)
		old, ok := before[ref]
		delete(before, ref)
		switch {
		case !ok:
			cs.Changes = append(cs.Changes, apply.Change{Object: ref, Action: apply.ActionCreated, Desired: o})
		case !sameObjects([]*unstructured.Unstructured{old}, []*unstructured.Unstructured{o}):
			kept, err := apply.NewObject(old)
			if err != nil {
				return err
			}
			cs.Changes = append(cs.Changes, apply.Change{Object: ref, Action: apply.ActionConfigured, Live: kept, Desired: o})
		}
	}
	if _, err := printDiffs(w, cs, nil); err != nil {
		return err
	}
	gone := slices.SortedFunc(maps.Keys(before), func(a, b v1alpha1.ObjectRef) int { return strings.Compare(a.String(), b.String()) })
	for _, ref := range gone {
		if _, err := fmt.Fprintf(w, "diff %s (pruned)\n# not in git any more\n", ref); err != nil {
			return err
		}
	}
	return nil
}

package syncset

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
	"tether.dev/tether/source"
)

// read reads what each git generator of ss names, at the newest commit of its
// ref: the ref is resolved through the listing the Syncs of the repository
// share (within the generator's interval), and the commit's trees are read from
// the agent's cache, so an unchanged repository costs no more than its Syncs
// already pay.
func (r *Reconciler) read(ctx context.Context, ss *v1alpha1.SyncSet) (map[string]fleet.Listing, error) {
	listings := map[string]fleet.Listing{}
	for _, g := range fleet.GitGenerators(&ss.Spec) {
		req, err := r.withAuth(ctx, ss, g.Git, source.Request{URL: g.Git.URL, Ref: g.Git.Ref, MaxAge: g.Git.IntervalOrDefault(), Tenant: ss.Namespace})
		if err != nil {
			return nil, fmt.Errorf("%s git: %w", g.Path, err)
		}
		rev, err := r.Source.Fetch(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("%s git: %w", g.Path, err)
		}
		l := fleet.Listing{Revision: rev.String()}
		if len(g.Git.Files) > 0 {
			l.Files, err = r.readFiles(rev, g.Git.Files)
		} else {
			l.Dirs, err = r.readDirs(rev, g.Git.Directories)
		}
		if err != nil {
			return nil, &fleet.Error{Entry: g.Path + " git", Reason: v1alpha1.ReasonGenerateFailed, Err: err}
		}
		listings[g.Path] = l
	}
	if fleet.UsesClusters(&ss.Spec) {
		if r.Registry == nil {
			return nil, &fleet.Error{Entry: "clusters", Reason: v1alpha1.ReasonGenerateFailed,
				Err: errors.New("this agent has no registered clusters (it runs without a namespace of its own, or --cluster-namespace)")}
		}
		clusters, err := r.Registry.Allowing(ctx, ss.Namespace)
		if err != nil {
			return nil, fmt.Errorf("reading the registered clusters: %w", err)
		}
		listings[fleet.ClustersListing] = fleet.Listing{Clusters: clusters}
	}
	return listings, nil
}

func (r *Reconciler) readDirs(rev source.Revision, dirs []v1alpha1.GitDirectory) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if d.Exclude {
			continue
		}
		found, err := r.Source.Glob(rev, d.Path, source.GlobDirectories)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

func (r *Reconciler) readFiles(rev source.Revision, files []v1alpha1.GitFile) ([]fleet.File, error) {
	var paths []string
	for _, f := range files {
		if f.Exclude {
			continue
		}
		found, err := r.Source.Glob(rev, f.Path, source.GlobFiles)
		if err != nil {
			return nil, err
		}
		paths = append(paths, found...)
	}
	if len(paths) > fleet.MaxSets {
		return nil, fmt.Errorf("the globs match %d files, more than %d", len(paths), fleet.MaxSets)
	}
	data, err := r.Source.ReadFiles(rev, paths)
	if err != nil {
		return nil, err
	}
	out := make([]fleet.File, 0, len(data))
	for p, b := range data {
		out = append(out, fleet.File{Path: p, Data: b})
	}
	return out, nil
}

// withAuth completes req with the credentials g's secretRef names and the
// keys its verify trusts, read as the template's account: the identity the
// SyncSet's Syncs act as.
func (r *Reconciler) withAuth(ctx context.Context, ss *v1alpha1.SyncSet, g *v1alpha1.GitGenerator, req source.Request) (source.Request, error) {
	if g.SecretRef == nil && g.Verify == nil {
		return req, nil
	}
	if r.Credentials == nil {
		return req, &fleet.Error{Entry: "git " + g.URL, Reason: v1alpha1.ReasonGenerateFailed, Err: errors.New("secretRef or verify is set but this agent reads no Secrets for SyncSets")}
	}
	account, err := fleet.TemplateAccount(ss)
	if err != nil {
		return req, err
	}
	as := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ss.Namespace, Name: ss.Name}, Spec: v1alpha1.SyncSpec{ServiceAccountName: account}}
	if g.SecretRef != nil {
		if req, err = r.Credentials.WithAuthAs(ctx, as, g.SecretRef.Name, req); err != nil {
			return req, err
		}
	}
	if g.Verify != nil {
		return r.Credentials.WithVerificationAs(ctx, as, g.Verify, req)
	}
	return req, nil
}

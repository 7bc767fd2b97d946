package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/git"
)

// The Sync by which Tether manages itself (docs/self-management.md), and the
// Secret of its git credentials when bootstrap is given any.
const (
	bootstrapSyncName   = "tether"
	bootstrapSecretName = "tether-git-credentials"
	// bootstrapPruneLimit refuses a revision that would prune more than a
	// quarter of the install's few objects at once.
	bootstrapPruneLimit = "25%"
)

// Environment variables of bootstrap's git credentials: kept off the command
// line, where they would reach the shell's history and the process list.
const (
	envGitPassword    = "TETHER_GIT_PASSWORD"
	envGitBearerToken = "TETHER_GIT_BEARER_TOKEN"
)

// bootstrapFlags are `tether bootstrap git`'s flags.
type bootstrapFlags struct {
	install  installFlags
	url      string
	path     string
	branch   string
	username string
	caFile   string
	author   string
	email    string
}

func newBootstrapCommand(kube *kubeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Install Tether and have it manage itself from a repository",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError(cmd, "name where the install goes: tether bootstrap git --url URL --path PATH")
		},
	}
	cmd.AddCommand(newBootstrapGitCommand(kube))
	return cmd
}

func newBootstrapGitCommand(kube *kubeFlags) *cobra.Command {
	f := &bootstrapFlags{install: installFlags{kube: kube}}
	cmd := &cobra.Command{
		Use:   "git --url URL --path PATH",
		Short: "Write the install into a git repository, install it, and create the Sync that keeps it",
		Long: "Do docs/self-management.md's steps as one command: write the install of this version (what `tether install --export` prints, with --ui and --image) into PATH/install.yaml of the branch, and the Sync that follows PATH (named " + bootstrapSyncName + " in " + agentNamespace + ", deletionPolicy Orphan, pruneLimit " + bootstrapPruneLimit + ") into PATH-sync.yaml beside it, outside the path it syncs; commit and push them when they differ from what the branch holds; then apply the install and the Sync as `tether install` does.\n\n" +
			"Safe to run again: a branch that holds both files as they are gets no commit, and objects that are as they should be are left unchanged. An empty repository gets its first commit on --branch.\n\n" +
			"Credentials: --username with the password in $" + envGitPassword + ", or a token in $" + envGitBearerToken + "; they go into the Secret " + agentNamespace + "/" + bootstrapSecretName + ", which the Sync names, and never into git or the output. --ca-file trusts a private authority, for the push and, as caFile in the same Secret, for the agent's fetches.",
		Example: `  tether bootstrap git --url https://git.example.com/platform/clusters.git --path clusters/prod/tether
  TETHER_GIT_PASSWORD=$TOKEN tether bootstrap git --url https://git.example.com/platform/clusters.git \
    --username tether --path clusters/prod/tether --branch main --ui`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return usageError(cmd, err.Error())
			}
			return f.run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.url, "url", "", "The repository's URL (https:// or http://).")
	fs.StringVar(&f.path, "path", "", "The directory of the repository that holds the install, and that the Sync follows (e.g. clusters/prod/tether).")
	fs.StringVar(&f.branch, "branch", "main", "The branch to commit to, and that the Sync follows.")
	fs.StringVar(&f.username, "username", "", "The username for HTTPS; the password comes from $"+envGitPassword+".")
	fs.StringVar(&f.caFile, "ca-file", "", "A PEM file of certificate authorities to trust for the repository's host, besides the system's.")
	fs.StringVar(&f.author, "author-name", "tether bootstrap", "The commit's author.")
	fs.StringVar(&f.email, "author-email", "tether-bootstrap@localhost", "The commit author's email.")
	fs.BoolVar(&f.install.ui, "ui", false, "Also install the in-cluster web UI (deploy/ui.yaml).")
	fs.StringVar(&f.install.image, "image", "", "Run this image instead of "+agentImageRepository+" at this release's tag (a build between releases: the embedded manifests' tag).")
	kube.bind(cmd)
	return cmd
}

// validate checks the flags that name the repository.
func (f *bootstrapFlags) validate() error {
	switch {
	case f.url == "":
		return fmt.Errorf("--url is required")
	case f.path == "":
		return fmt.Errorf("--path is required")
	case path.IsAbs(f.path) || path.Clean(f.path) == "." || strings.HasPrefix(path.Clean(f.path), ".."):
		return fmt.Errorf("--path %q: want a directory inside the repository, such as clusters/prod/tether", f.path)
	case f.branch == "":
		return fmt.Errorf("--branch may not be empty")
	}
	f.path = path.Clean(f.path)
	return nil
}

// files are what bootstrap writes into the repository: the install, and the
// Sync beside the path it follows.
func (f *bootstrapFlags) files(install []*unstructured.Unstructured, sync *v1alpha1.Sync) (map[string][]byte, error) {
	var buf bytes.Buffer
	if err := exportManifests(&buf, install); err != nil {
		return nil, err
	}
	syncText, err := syncYAML(sync)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# The Sync by which Tether keeps its own install (%s) equal to git, written by\n# tether bootstrap git. It lies outside the path it follows, so it cannot change itself.\n", f.path)
	return map[string][]byte{
		path.Join(f.path, "install.yaml"): buf.Bytes(),
		f.path + "-sync.yaml":             append([]byte(header+"---\n"), syncText...),
	}, nil
}

// sync is the Sync that follows the install in git.
func (f *bootstrapFlags) sync(withSecret bool) *v1alpha1.Sync {
	limit := intstr.FromString(bootstrapPruneLimit)
	s := &v1alpha1.Sync{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync"},
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapSyncName, Namespace: agentNamespace},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{URL: f.url, Ref: v1alpha1.GitRef{Branch: f.branch}, Path: f.path},
			// The install's objects name their namespaces; this is where any
			// that named none would go.
			Destination:    v1alpha1.DestinationSpec{Namespace: agentNamespace},
			PruneLimit:     &limit,
			DeletionPolicy: v1alpha1.DeletionPolicyOrphan,
		},
	}
	if withSecret {
		s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: bootstrapSecretName}
	}
	return s
}

// gitAuth reads the credentials from the flags and the environment.
func (f *bootstrapFlags) gitAuth() (git.Auth, error) {
	auth := git.Auth{Username: f.username, Password: os.Getenv(envGitPassword), BearerToken: os.Getenv(envGitBearerToken)}
	if f.caFile != "" {
		ca, err := os.ReadFile(f.caFile)
		if err != nil {
			return auth, fmt.Errorf("--ca-file: %w", err)
		}
		auth.CAFile = ca
	}
	return auth, nil
}

// secret is the Secret of the credentials the Sync fetches with (the private
// authority it trusts among them); nil when there are none.
func secretOf(auth git.Auth) *unstructured.Unstructured {
	data := map[string]any{}
	for key, value := range map[string]string{"username": auth.Username, "password": auth.Password, "bearerToken": auth.BearerToken, "caFile": string(auth.CAFile)} {
		if value != "" {
			data[key] = base64.StdEncoding.EncodeToString([]byte(value))
		}
	}
	if len(data) == 0 {
		return nil
	}
	s := &unstructured.Unstructured{Object: map[string]any{"data": data, "type": "Opaque"}}
	s.SetAPIVersion("v1")
	s.SetKind("Secret")
	s.SetNamespace(agentNamespace)
	s.SetName(bootstrapSecretName)
	s.SetLabels(map[string]string{"app.kubernetes.io/part-of": "tether"})
	return s
}

// run writes the install into git, then applies it with the Sync.
func (f *bootstrapFlags) run(cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	install, err := f.install.manifests()
	if err != nil {
		return err
	}
	auth, err := f.gitAuth()
	if err != nil {
		return err
	}
	secret := secretOf(auth)
	sync := f.sync(secret != nil)
	files, err := f.files(install, sync)
	if err != nil {
		return err
	}
	target := gitTarget{url: f.url, branch: f.branch, auth: auth, author: object.Signature{Name: f.author, Email: f.email}}
	commit, err := target.commitFiles(files, fmt.Sprintf("tether bootstrap: install tether %s at %s", version, f.path))
	if err != nil {
		return err
	}
	if commit == "" {
		fmt.Fprintf(out, "git: %s already holds the install at %s: nothing to commit\n", f.branch, f.path)
	} else {
		fmt.Fprintf(out, "git: committed %s to %s: %s/install.yaml, %s-sync.yaml\n", commit[:12], f.branch, f.path, f.path)
	}
	// Decoded afresh: ApplyAll changes the objects it is given.
	objs, err := f.install.manifests()
	if err != nil {
		return err
	}
	if secret != nil {
		objs = append(objs, secret)
	}
	syncObj, err := decodeObjects(files[f.path+"-sync.yaml"])
	if err != nil {
		return err
	}
	objs = append(objs, syncObj...)
	return f.install.applyObjects(cmd.Context(), objs, out)
}

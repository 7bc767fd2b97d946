package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tether.dev/tether/source"
	"tether.dev/tether/source/artifact"
	"tether.dev/tether/source/oci"
)

// newPushCommand groups what is pushed to a registry: `tether push artifact`.
func newPushCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "push",
		Short: "Push desired state to an OCI registry",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Usage()
			return errUsage
		},
	}
	cmd.AddCommand(newPushArtifactCommand())
	return cmd
}

// pushFlags are `tether push artifact`'s flags.
type pushFlags struct {
	url, source, revision, creds string
	tags                         []string
}

func newPushArtifactCommand() *cobra.Command {
	var f pushFlags
	cmd := &cobra.Command{
		Use:   "artifact DIR --url oci://HOST/PATH --tag TAG",
		Short: "Pack a directory and push it as an OCI artifact",
		Long: "Pack DIR (its files and directories, .git left out) as a gzipped tar and push it to --url as Flux's artifact format, " +
			"tagged with each --tag: a Sync's spec.source.oci, or Flux's OCIRepository, takes it unchanged. The same files make the same digest " +
			"(times and owners are zeroed). The artifact is annotated with --source and --revision (by default the git remote and the branch@sha1:commit " +
			"of DIR's work tree) and the time it was pushed.\n\n" +
			"Credentials: --creds USER:PASSWORD, else the entry of the registry in the docker config file ($DOCKER_CONFIG/config.json, else " +
			"~/.docker/config.json; its auths, not credential helpers). A registry on a loopback address is spoken to over http.\n\n" +
			"It prints the artifact's URL with its digest, for a Sync to pin (spec.source.oci.ref.digest) or for cosign to sign.",
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.url == "" || len(f.tags) == 0 {
				return usageError(cmd, "--url and at least one --tag are required")
			}
			return runPushArtifact(cmd.Context(), args[0], f, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.url, "url", "", "the repository to push to, oci://host[:port]/path")
	cmd.Flags().StringArrayVar(&f.tags, "tag", nil, "a tag to push the artifact as (repeatable)")
	cmd.Flags().StringVar(&f.source, "source", "", "the org.opencontainers.image.source annotation (default: DIR's git remote origin)")
	cmd.Flags().StringVar(&f.revision, "revision", "", "the org.opencontainers.image.revision annotation (default: branch@sha1:commit of DIR's work tree)")
	cmd.Flags().StringVar(&f.creds, "creds", "", "USER:PASSWORD for the registry (default: the docker config file's entry)")
	return cmd
}

func runPushArtifact(ctx context.Context, dir string, f pushFlags, stdout io.Writer) error {
	repo, err := oci.ParseURL(f.url)
	if err != nil {
		return err
	}
	creds, err := pushCredentials(f.creds, repo.Registry)
	if err != nil {
		return err
	}
	layer, err := artifact.Pack(dir)
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	annotations := map[string]string{artifact.AnnotationCreated: time.Now().UTC().Format(time.RFC3339)}
	for key, value := range map[string]string{artifact.AnnotationSource: firstNonEmpty(f.source, gitRemote(dir)), artifact.AnnotationRevision: firstNonEmpty(f.revision, gitRevision(dir))} {
		if value != "" {
			annotations[key] = value
		}
	}
	client, err := oci.New(oci.Options{})
	if err != nil {
		return err
	}
	desc, err := artifact.Push(ctx, client, repo, creds, layer, annotations, f.tags...)
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", repo, err)
	}
	for _, tag := range f.tags {
		_, _ = fmt.Fprintf(stdout, "%s:%s@%s\n", repo, tag, desc.Digest)
	}
	return nil
}

// pushCredentials are --creds, else the registry's entry in the docker
// config file, else none.
func pushCredentials(flag, registry string) (oci.Credentials, error) {
	if flag != "" {
		user, password, ok := strings.Cut(flag, ":")
		if !ok {
			return oci.Credentials{}, errors.New("--creds is USER:PASSWORD")
		}
		return oci.Credentials{Username: user, Password: password}, nil
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return oci.Credentials{}, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return oci.Credentials{}, nil
	}
	if err != nil {
		return oci.Credentials{}, err
	}
	creds, err := oci.ParseDockerConfig(data, registry)
	if err != nil {
		return oci.Credentials{}, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return creds, nil
}

// gitRevision is DIR's work tree's branch@sha1:commit, as Flux writes a
// revision; "" outside a work tree.
func gitRevision(dir string) string {
	commit := gitOutput(dir, "rev-parse", "HEAD")
	if commit == "" {
		return ""
	}
	if branch := gitOutput(dir, "symbolic-ref", "--short", "-q", "HEAD"); branch != "" {
		return branch + "@sha1:" + commit
	}
	return "sha1:" + commit
}

// gitRemote is DIR's work tree's remote origin, with any credentials
// written into it taken out: the annotation is public.
func gitRemote(dir string) string {
	remote := gitOutput(dir, "remote", "get-url", "origin")
	if remote == "" {
		return ""
	}
	return source.RedactURL(remote)
}

// gitOutput is what git prints for args in dir, trimmed; "" on any failure.
func gitOutput(dir string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

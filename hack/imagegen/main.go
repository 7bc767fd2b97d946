// Command imagegen builds Tether's container image without a container engine: it
// assembles a minimal base itself (a CA certificates file from the Mozilla roots
// that golang.org/x/crypto/x509roots/fallback pins, /etc/passwd and /etc/group with
// the non-root user 65532 that deploy/ runs as, /tmp and a home), adds the static
// tether binary built for each platform, and writes one multi-platform OCI image
// index with the OCI labels (source, revision, version, created) and an SPDX JSON
// SBOM attached to it as an OCI referrer. Nothing is pulled from any registry.
//
//	imagegen -platform linux/amd64=bin/tether-linux-amd64 -platform linux/arm64=... \
//	  -version v0.2.0 -revision $(git rev-parse HEAD) -created $(git log -1 --format=%cI) \
//	  [-layout dist/image] [-push registry.example.com/tether:v0.2.0 -digest-file FILE]
//	imagegen -chart dist/v0.2.0/tether-0.2.0.tgz -push registry.example.com/charts/tether:0.2.0
//
// The build is reproducible: every file's time is -created, owners and modes are
// fixed, entries are sorted, so the same binaries and flags give the same digests.
// -layout writes an OCI image layout directory (make image); -push writes the
// index, its images and the SBOM to a registry (make release), with the
// credentials of ~/.docker/config.json, and prints the pushed reference with its
// digest. With -chart it pushes a chart package instead, as `helm push` does.
// It is its own Go module so that go-containerregistry's dependencies
// (docker's CLI configuration among them) stay out of the agent's go.mod.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// Flags of one build.
type options struct {
	platforms  []platformBinary
	version    string
	revision   string
	source     string
	created    time.Time
	layout     string
	push       string
	digestFile string
	chart      string
}

// platformBinary is one -platform flag: the binary that runs on os/arch.
type platformBinary struct {
	os, arch, binary string
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagegen:", err)
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "imagegen:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var opts options
	var created string
	fs := flag.NewFlagSet("imagegen", flag.ContinueOnError)
	fs.Func("platform", "os/arch=path of the static tether binary for that platform (repeat for each platform)", func(v string) error {
		p, err := parsePlatform(v)
		opts.platforms = append(opts.platforms, p)
		return err
	})
	fs.StringVar(&opts.version, "version", "dev", "The version the image is labelled with (org.opencontainers.image.version).")
	fs.StringVar(&opts.revision, "revision", "unknown", "The commit the image is built from (org.opencontainers.image.revision).")
	fs.StringVar(&opts.source, "source", "https://github.com/tether-dev/tether", "The source repository (org.opencontainers.image.source).")
	fs.StringVar(&created, "created", "1970-01-01T00:00:00Z", "RFC 3339 time of the image and of every file in it: the commit's time makes the build reproducible.")
	fs.StringVar(&opts.layout, "layout", "", "Write the image as an OCI image layout into this directory (created; must be empty or absent).")
	fs.StringVar(&opts.push, "push", "", "Push the image index and its SBOM to this reference, e.g. registry.example.com/tether:v0.2.0.")
	fs.StringVar(&opts.chart, "chart", "", "Push this chart package (.tgz) to -push as an OCI artifact, as `helm push` does, instead of building the image.")
	fs.StringVar(&opts.digestFile, "digest-file", "", "With -push: write the pushed reference pinned to its digest (repo@sha256:...) into this file.")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return opts, fmt.Errorf("-created: %w", err)
	}
	opts.created = t.UTC()
	switch {
	case opts.chart != "" && (opts.push == "" || opts.layout != "" || len(opts.platforms) > 0):
		return opts, fmt.Errorf("-chart takes -push and no -platform nor -layout")
	case opts.chart != "":
	case len(opts.platforms) == 0:
		return opts, fmt.Errorf("no -platform given")
	case opts.layout == "" && opts.push == "":
		return opts, fmt.Errorf("nothing to do: give -layout DIR, -push REF or both")
	case opts.digestFile != "" && opts.push == "":
		return opts, fmt.Errorf("-digest-file needs -push")
	}
	return opts, nil
}

func parsePlatform(v string) (platformBinary, error) {
	platform, binary, ok := strings.Cut(v, "=")
	osName, arch, ok2 := strings.Cut(platform, "/")
	if !ok || !ok2 || osName == "" || arch == "" || binary == "" {
		return platformBinary{}, fmt.Errorf("-platform %q: want os/arch=path", v)
	}
	return platformBinary{os: osName, arch: arch, binary: binary}, nil
}

func run(opts options) error {
	if opts.chart != "" {
		pinned, err := pushChart(opts.chart, opts.push)
		if err != nil {
			return fmt.Errorf("pushing the chart %s: %w", opts.chart, err)
		}
		return report(opts, pinned)
	}
	idx, err := buildIndex(opts)
	if err != nil {
		return err
	}
	sbom, err := buildSBOM(opts, idx)
	if err != nil {
		return err
	}
	if opts.layout != "" {
		if err := writeLayout(opts.layout, opts.version, idx, sbom); err != nil {
			return fmt.Errorf("writing the OCI layout %s: %w", opts.layout, err)
		}
	}
	if opts.push != "" {
		pinned, err := push(opts.push, idx, sbom)
		if err != nil {
			return fmt.Errorf("pushing %s: %w", opts.push, err)
		}
		return report(opts, pinned)
	}
	return nil
}

// report prints what was pushed, pinned by digest, and writes it to -digest-file.
func report(opts options, pinned string) error {
	fmt.Println(pinned)
	if opts.digestFile == "" {
		return nil
	}
	return os.WriteFile(opts.digestFile, []byte(pinned+"\n"), 0o644) //nolint:gosec // a public reference
}

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// TestImportWritesSyncsTheAPIServerAccepts: `tether import` on the peers'
// own examples (importer/testdata, byte for byte) prints Syncs that the API
// server accepts as they are (the CRD's schema and rules), and lists on
// standard error what it could not carry.
func TestImportWritesSyncsTheAPIServerAccepts(t *testing.T) {
	cp := controlplane.Shared(t)
	cfg := cp.Config()
	controlplane.InstallCRDs(t, cfg, "../../deploy/base/crd")
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob("../../importer/testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range examples {
		if strings.HasSuffix(file, ".syncs.yaml") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			ns := controlplane.NewNamespace(t, cfg)
			var out, errOut bytes.Buffer
			if err := run(t.Context(), []string{"import", "-f", file}, &out, &errOut); err != nil {
				t.Fatalf("tether import: %v\n%s", err, errOut.String())
			}
			syncs, err := decodeObjects(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if len(syncs) == 0 {
				t.Fatalf("no Sync written; stderr:\n%s", errOut.String())
			}
			for _, u := range syncs {
				var s v1alpha1.Sync
				b, _ := yaml.Marshal(u.Object)
				if err := yaml.UnmarshalStrict(b, &s); err != nil {
					t.Fatalf("a Sync written does not read back strictly: %v\n%s", err, b)
				}
				s.Namespace = ns
				if err := c.Create(t.Context(), &s); err != nil {
					t.Errorf("the API server refused the Sync %s: %v\n%s", s.Name, err, b)
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
				if line != "" && !strings.HasPrefix(line, "not carried: ") {
					t.Errorf("stderr line %q is not a loss", line)
				}
			}
		})
	}
}

// TestImportCheck: --check answers 1 when something would be lost, 0 when
// nothing would.
func TestImportCheck(t *testing.T) {
	for file, want := range map[string]int{
		"../../importer/testdata/flux-kustomization.yaml":        exitFailed, // spec.timeout
		"../../importer/testdata/flux-helmrelease-chartref.yaml": 0,
	} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"import", "--check", "-f", file}, &out, &errOut)
		if got := exitCode(err, io.Discard); got != want {
			t.Errorf("tether import --check -f %s: exit %d, want %d\nstderr: %s", file, got, want, errOut.String())
		}
		if out.Len() == 0 {
			t.Errorf("tether import --check -f %s printed no Sync", file)
		}
	}
}

// TestAnImportedFluxKustomizationRendersWhatFluxBuilds: the Sync that `tether
// import` writes for Flux's own example (importer/testdata/flux-kustomization.yaml)
// renders, from a copy of the repository path it names (podinfo's kustomize/,
// byte for byte), the objects Flux applies: Flux builds the path's
// kustomization with targetNamespace set as its namespace, which the pinned
// kustomize CLI builds here from an overlay saying the same.
func TestAnImportedFluxKustomizationRendersWhatFluxBuilds(t *testing.T) {
	const podinfo = "../../importer/testdata/podinfo-kustomize"
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"import", "-f", "../../importer/testdata/flux-kustomization.yaml"}, &out, &errOut); err != nil {
		t.Fatalf("tether import: %v\n%s", err, errOut.String())
	}
	written, err := decodeObjects(out.Bytes())
	if err != nil || len(written) != 1 {
		t.Fatalf("want one Sync written, got %d (%v):\n%s", len(written), err, out.String())
	}
	var s v1alpha1.Sync
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(written[0].Object, &s); err != nil {
		t.Fatal(err)
	}

	// The repository, served on loopback: the path the Sync names, holding
	// podinfo's files, on the branch it follows.
	files := map[string]string{}
	entries, err := os.ReadDir(podinfo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(podinfo, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[path.Join(s.Spec.Source.PathOrDefault(), e.Name())] = string(data)
	}
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "podinfo")
	repo.Commit(t, files, "podinfo's kustomize/")
	repo.CreateBranch(t, s.Spec.Source.Ref.Branch)
	req := source.Request{URL: repo.URL(), Ref: s.Spec.Source.Ref}
	got, err := fetchAndRender(t.Context(), req, s.Spec.Source.PathOrDefault(), source.DirectoryOf(s.Spec.Source.Directory), source.Helm{}, nil, s.Spec.Kustomize)
	if err != nil {
		t.Fatalf("rendering the imported Sync: %v", err)
	}

	overlay := t.TempDir()
	if err := os.CopyFS(filepath.Join(overlay, "base"), os.DirFS(podinfo)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("resources: [base]\nnamespace: default\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	built, err := exec.Command(kustomizeCLI(t), "build", overlay).Output()
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	want, err := decodeObjects(built)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("kustomize built %d objects of podinfo, want its 3", len(want))
	}
	if g, w := yamlOf(t, got), yamlOf(t, want); g != w {
		t.Errorf("the imported Sync renders\n%s\nFlux builds\n%s", g, w)
	}
}

// yamlOf is objs as YAML, in the order of their kind, namespace and name.
func yamlOf(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	slices.SortFunc(objs, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetKind()+"/"+a.GetNamespace()+"/"+a.GetName(), b.GetKind()+"/"+b.GetNamespace()+"/"+b.GetName())
	})
	var b strings.Builder
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.String()
}

// kustomizeCLI is the pinned kustomize CLI that make test builds
// ($TETHER_KUSTOMIZE).
func kustomizeCLI(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TETHER_KUSTOMIZE")
	if bin == "" {
		if testing.Short() || os.Getenv("CI") != "true" {
			t.Skip("TETHER_KUSTOMIZE names no kustomize CLI; make test builds and sets it")
		}
		t.Fatal("TETHER_KUSTOMIZE names no kustomize CLI under CI=true; make test builds and sets it")
	}
	return bin
}

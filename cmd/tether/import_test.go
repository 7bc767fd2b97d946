package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
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

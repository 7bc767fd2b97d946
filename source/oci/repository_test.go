package oci_test

import (
	"strings"
	"testing"

	"tether.dev/tether/source/oci"
)

func TestAnOCIURLNamesARegistryAndARepository(t *testing.T) {
	for raw, want := range map[string]oci.Repository{
		"oci://ghcr.io/stefanprodan/charts":         {Registry: "ghcr.io", Path: "stefanprodan/charts"},
		"oci://registry.example.com:5000/a/b/":      {Registry: "registry.example.com:5000", Path: "a/b"},
		"oci://docker.io/nginx":                     {Registry: "registry-1.docker.io", Path: "library/nginx"},
		"oci://index.docker.io/bitnamicharts/redis": {Registry: "registry-1.docker.io", Path: "bitnamicharts/redis"},
		"oci://registry-1.docker.io/alpine":         {Registry: "registry-1.docker.io", Path: "library/alpine"},
		"oci://127.0.0.1:5000/":                     {Registry: "127.0.0.1:5000", PlainHTTP: true},
		"oci://127.1.2.3/x":                         {Registry: "127.1.2.3", Path: "x", PlainHTTP: true},
		"oci://localhost:5000/a/b":                  {Registry: "localhost:5000", Path: "a/b", PlainHTTP: true},
		"oci://[::1]:5000/x":                        {Registry: "[::1]:5000", Path: "x", PlainHTTP: true},
		"oci://Registry.Example.com/x":              {Registry: "registry.example.com", Path: "x"},
	} {
		got, err := oci.ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("ParseURL(%s) = %+v (%v); want %+v", raw, got, err, want)
		}
	}
}

func TestAnOCIURLThatIsNotOneIsRefusedWithoutItsSecrets(t *testing.T) {
	for _, raw := range []string{
		"oci://", "https://ghcr.io/x", "oci:///x", "oci://user:s3cret@ghcr.io/x", "oci://ghcr.io/x?token=s3cret",
		"oci://ghcr.io/x#s3cret", "oci://ghcr.io/Upper", "oci://ghcr.io/a//b", "oci://ghcr.io/-a", "oci://ghcr.io:port/x",
		"oci://ghcr.io/" + strings.Repeat("a", 256), "oci://ghcr.io/a b",
	} {
		got, err := oci.ParseURL(raw)
		if err == nil {
			t.Errorf("ParseURL(%.60s) = %+v; want it refused", raw, got)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || len(err.Error()) > 300 {
			t.Errorf("ParseURL(%.60s): %q; want an error of bounded length quoting no secret", raw, err)
		}
	}
}

func TestAChartsRepositoryIsItsRegistryPathAndItsName(t *testing.T) {
	for base, want := range map[string]string{
		"oci://ghcr.io/stefanprodan/charts": "oci://ghcr.io/stefanprodan/charts/webapp",
		"oci://127.0.0.1:5000":              "oci://127.0.0.1:5000/webapp",
		"oci://docker.io":                   "oci://registry-1.docker.io/library/webapp",
		"oci://docker.io/bitnamicharts":     "oci://registry-1.docker.io/bitnamicharts/webapp",
		"oci://docker.io/org/charts":        "oci://registry-1.docker.io/org/charts/webapp",
	} {
		repo, err := oci.ParseURL(base)
		if err != nil {
			t.Fatalf("ParseURL(%s): %v", base, err)
		}
		got, err := repo.Join("webapp")
		if err != nil || got.String() != want {
			t.Errorf("%s joined with webapp = %s (%v); want %s", base, got, err, want)
		}
	}
	repo, _ := oci.ParseURL("oci://ghcr.io/charts")
	if _, err := repo.Join("Web App"); err == nil {
		t.Error("a chart name outside the path grammar joined; want it refused")
	}
}

func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{"oci://ghcr.io/a/b", "oci://docker.io/x", "oci://[::1]:1/x", "oci://u:p@h/x?q#f"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		repo, err := oci.ParseURL(raw)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Errorf("an error of %d bytes; want a bounded one", len(err.Error()))
			}
			return
		}
		again, err := oci.ParseURL(repo.String())
		if err != nil || again != repo {
			t.Errorf("ParseURL(%q) = %+v, whose String %q parses to %+v (%v)", raw, repo, repo.String(), again, err)
		}
	})
}

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"sigs.k8s.io/yaml"
)

// Media types of a chart in an OCI registry, as `helm push` writes it (Helm's
// registry documentation): Chart.yaml as JSON for the config, the package as
// the one layer.
const (
	chartConfigType = "application/vnd.cncf.helm.config.v1+json"
	chartLayerType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// chartMeta is what of Chart.yaml names the chart and its version.
type chartMeta struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

// pushChart pushes the chart package pkg to ref as `helm push` would push it to
// ref's registry and repository, so that `helm install oci://REPO --version V`
// and Tether's spec.source.chart read it; the tag is the chart's version ("+"
// written "_", as Helm does), and ref's tag, if any, must equal it.
func pushChart(pkg, ref string) (string, error) {
	data, err := os.ReadFile(pkg)
	if err != nil {
		return "", err
	}
	config, meta, err := chartConfig(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", pkg, err)
	}
	tag := strings.ReplaceAll(meta.Version, "+", "_")
	repo, err := name.NewRepository(ref, name.StrictValidation)
	if err != nil {
		t, terr := name.NewTag(ref, name.StrictValidation)
		if terr != nil {
			return "", err
		}
		if t.TagStr() != tag {
			return "", fmt.Errorf("%s: the chart's version is %s, the tag %s", pkg, meta.Version, t.TagStr())
		}
		repo = t.Repository
	}
	img, err := newArtifact(artifactManifest{Annotations: map[string]string{
		"org.opencontainers.image.title":       meta.Name,
		"org.opencontainers.image.version":     meta.Version,
		"org.opencontainers.image.description": meta.Description,
	}}, chartConfigType, config, static.NewLayer(data, chartLayerType))
	if err != nil {
		return "", err
	}
	if err := remote.Write(repo.Tag(tag), img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", err
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return repo.Name() + "@" + digest.String(), nil
}

// chartConfig reads CHART/Chart.yaml out of the package and returns it as JSON.
func chartConfig(pkg []byte) ([]byte, chartMeta, error) {
	var meta chartMeta
	zr, err := gzip.NewReader(bytes.NewReader(pkg))
	if err != nil {
		return nil, meta, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, meta, errors.New("the package holds no Chart.yaml")
		}
		if err != nil {
			return nil, meta, err
		}
		if dir, file := path.Split(h.Name); file != "Chart.yaml" || strings.Count(dir, "/") != 1 {
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return nil, meta, err
		}
		config, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, meta, fmt.Errorf("Chart.yaml: %w", err)
		}
		if err := yaml.Unmarshal(raw, &meta); err != nil || meta.Name == "" || meta.Version == "" {
			return nil, meta, fmt.Errorf("Chart.yaml names no chart and version: %v", err)
		}
		return config, meta, nil
	}
}

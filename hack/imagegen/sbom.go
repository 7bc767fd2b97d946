package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of the SBOM as an OCI artifact (image-spec 1.1's artifact guidance:
// the empty config, the artifact type naming what the layer is).
const (
	sbomType       = "application/spdx+json"
	emptyConfig    = "application/vnd.oci.empty.v1+json"
	caBundleModule = "golang.org/x/crypto/x509roots/fallback"
)

// spdxDocument is the part of SPDX 2.3's JSON form this SBOM fills.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	Comment          string            `json:"comment,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// sbomDocument lists what the image is made of: the tether module, every module
// and the Go toolchain its binaries were built with (read from the binaries' own
// build information, as `go version -m` prints it), and the CA bundle's module.
func sbomDocument(opts options, subject v1.Hash) ([]byte, error) {
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              "tether-" + opts.version,
		DocumentNamespace: opts.source + "/spdx/" + opts.version + "/" + subject.Hex,
		CreationInfo:      spdxCreationInfo{Created: opts.created.Format("2006-01-02T15:04:05Z"), Creators: []string{"Tool: tether-imagegen"}},
	}
	seen := map[string]bool{}
	add := func(pkg spdxPackage, relation string) {
		if seen[pkg.SPDXID] {
			return
		}
		seen[pkg.SPDXID] = true
		doc.Packages = append(doc.Packages, pkg)
		doc.Relationships = append(doc.Relationships, spdxRelationship{Element: "SPDXRef-DOCUMENT", Type: relation, Related: pkg.SPDXID})
	}
	for _, p := range opts.platforms {
		info, err := buildinfo.ReadFile(p.binary)
		if err != nil {
			return nil, fmt.Errorf("%s: reading its build information: %w", p.binary, err)
		}
		add(goPackage(info.Main.Path, opts.version, opts.source), "DESCRIBES")
		add(goPackage("stdlib", info.GoVersion, "https://go.dev/dl/"), "DESCRIBES")
		for _, dep := range info.Deps {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			add(goPackage(dep.Path, dep.Version, "NOASSERTION"), "DESCRIBES")
		}
	}
	if self, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range self.Deps {
			if dep.Path == caBundleModule {
				pkg := goPackage(dep.Path, dep.Version, "NOASSERTION")
				pkg.Comment = "the source of " + caFile
				add(pkg, "DESCRIBES")
			}
		}
	}
	sort.Slice(doc.Packages[2:], func(i, j int) bool { return doc.Packages[2+i].Name < doc.Packages[2+j].Name })
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	err := enc.Encode(doc)
	return b.Bytes(), err
}

// goPackage is a Go module as an SPDX package with its package URL.
func goPackage(path, version, download string) spdxPackage {
	sum := sha256.Sum256([]byte(path + "@" + version))
	return spdxPackage{
		Name: path, VersionInfo: version, DownloadLocation: download,
		SPDXID: "SPDXRef-Package-" + hex.EncodeToString(sum[:8]),
		ExternalRefs: []spdxExternalRef{{
			ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
			ReferenceLocator: "pkg:golang/" + strings.ToLower(path) + "@" + version,
		}},
	}
}

// buildSBOM is the SBOM as an OCI artifact whose subject is the image index, so
// registries list it among the index's referrers (or under the referrers tag
// schema's sha256-<digest> tag where they lack the API).
func buildSBOM(opts options, idx v1.ImageIndex) (v1.Image, error) {
	subject, err := partial.Descriptor(idx)
	if err != nil {
		return nil, err
	}
	doc, err := sbomDocument(opts, subject.Digest)
	if err != nil {
		return nil, err
	}
	return newArtifact(artifactManifest{
		ArtifactType: sbomType,
		Subject:      &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations:  map[string]string{"org.opencontainers.image.created": labels(opts)["org.opencontainers.image.created"]},
	}, emptyConfig, []byte("{}"), static.NewLayer(doc, sbomType))
}

// newArtifact completes m (its media type, config and one layer) and returns it
// as an image go-containerregistry can write.
func newArtifact(m artifactManifest, configType types.MediaType, config []byte, layer v1.Layer) (v1.Image, error) {
	a := &artifact{config: config, configType: configType, layer: layer}
	cfgDigest, cfgSize, err := v1.SHA256(bytes.NewReader(config))
	if err != nil {
		return nil, err
	}
	layerDesc, err := partial.Descriptor(layer)
	if err != nil {
		return nil, err
	}
	m.SchemaVersion, m.MediaType = 2, types.OCIManifestSchema1
	m.Config = v1.Descriptor{MediaType: configType, Digest: cfgDigest, Size: cfgSize}
	m.Layers = []v1.Descriptor{*layerDesc}
	if a.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(a)
}

// artifactManifest is an image manifest with image-spec 1.1's artifactType, which
// go-containerregistry's v1.Manifest does not carry.
type artifactManifest struct {
	SchemaVersion int64             `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Subject       *v1.Descriptor    `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// artifact is a one-layer OCI artifact (the SBOM, a chart) for
// go-containerregistry's writers.
type artifact struct {
	manifest, config []byte
	configType       types.MediaType
	layer            v1.Layer
}

var _ partial.CompressedImageCore = (*artifact)(nil)

func (a *artifact) RawConfigFile() ([]byte, error)      { return a.config, nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }

func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := a.layer.Digest(); err == nil && d == h {
		return a.layer, nil
	}
	if d, _, err := v1.SHA256(bytes.NewReader(a.config)); err == nil && d == h {
		return static.NewLayer(a.config, a.configType), nil
	}
	return nil, fmt.Errorf("the SBOM artifact has no blob %s", h)
}

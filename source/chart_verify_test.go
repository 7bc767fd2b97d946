package source_test

import (
	"errors"
	"strings"
	"testing"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/ociregistry"
	"tether.dev/tether/test/signing"
)

func TestAChartFromAnOCIRegistryIsFetchedOnlyWhenATrustedCosignKeySignedIt(t *testing.T) {
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	reg.Push(t, "webapp", "1.0.0", chartrepo.Package(t, webapp, "1.0.0"))
	ci := signing.NewCosignKey(t)
	keys, err := source.ParseCosignKeys(map[string][]byte{"ci.pub": ci.Public})
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(t, source.Options{})
	req := source.ChartRequest{Repository: reg.Repository, Name: "webapp", Version: "1.x", Keys: keys}
	digest := reg.Digest(t, "webapp", "1.0.0")

	_, err = src.FetchChart(t.Context(), req)
	var fe *source.FetchError
	if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonRevisionNotVerified || !strings.Contains(err.Error(), "webapp@1.0.0") || !strings.Contains(err.Error(), digest) {
		t.Fatalf("an unsigned chart: %v; want RevisionNotVerified naming webapp@1.0.0 and its manifest %s", err, digest)
	}

	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: godigest.Digest(digest)}
	sig := ci.SignatureManifest(t, reg.Host()+"/charts/webapp", subject)
	reg.PushSignature(t, "webapp", sig.Tag, map[string][]byte{sig.ConfigDescriptor.MediaType: sig.Config, sig.PayloadDescriptor.MediaType: sig.Payload}, sig.Manifest)
	rev, err := src.FetchChart(t.Context(), req)
	if err != nil || rev.Ref != "webapp@1.0.0" || !strings.Contains(rev.Signer, "ci.pub") {
		t.Fatalf("the chart signed: %+v, %v; want webapp@1.0.0 signed by ci.pub", rev, err)
	}
	snap, err := src.RenderChart(t.Context(), rev, source.Helm{ReleaseName: "web", Namespace: "apps"})
	if err != nil || len(snap.Objects) == 0 || snap.Revision.Signer != rev.Signer {
		t.Fatalf("RenderChart: %v; want the chart's objects, the signer kept", err)
	}
}

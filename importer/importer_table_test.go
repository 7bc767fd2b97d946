package importer_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/importer"
)

func objects(t *testing.T, text string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(text, "---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

const app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd%s}\n" +
	"spec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n" +
	"  syncPolicy: {automated: {prune: true}}\n  source: {repoURL: https://git.example.com/r.git, path: ./web, targetRevision: %q}\n"

func TestConvertArgoCDRevisions(t *testing.T) {
	for rev, want := range map[string]v1alpha1.GitRef{
		"main":      {Branch: "main"},
		"release-1": {Branch: "release-1"},
		"v1.2.3":    {Tag: "v1.2.3"},
		"1.2":       {Tag: "1.2"},
		">=1.0 <2":  {SemVer: ">=1.0 <2"},
		"1.*":       {SemVer: "1.*"},
		"0123456789abcdef0123456789abcdef01234567": {Commit: "0123456789abcdef0123456789abcdef01234567"},
		"HEAD": {Branch: "main"},
	} {
		res := importer.Convert(objects(t, strings.Replace(strings.Replace(app, "%s", "", 1), "%q", `"`+rev+`"`, 1)))
		if len(res.Syncs) != 1 {
			t.Fatalf("%s: %d Syncs", rev, len(res.Syncs))
		}
		if diff := cmp.Diff(want, res.Syncs[0].Spec.Source.Ref); diff != "" {
			t.Errorf("targetRevision %s (-want +got):\n%s", rev, diff)
		}
		if lost := len(res.Lost) > 0; lost != (rev == "HEAD") {
			t.Errorf("targetRevision %s: lost %v", rev, res.Lost)
		}
	}
}

func TestConvertArgoCDDeletion(t *testing.T) {
	for finalizers, want := range map[string]v1alpha1.DeletionPolicy{
		"": v1alpha1.DeletionPolicyOrphan,
		", finalizers: [resources-finalizer.argocd.argoproj.io]": "",
	} {
		res := importer.Convert(objects(t, strings.Replace(strings.Replace(app, "%s", finalizers, 1), "%q", "main", 1)))
		if got := res.Syncs[0].Spec.DeletionPolicy; got != want {
			t.Errorf("finalizers %q: deletionPolicy %q, want %q", finalizers, got, want)
		}
	}
}

func TestConvertReportsWhatItCannotCarry(t *testing.T) {
	for name, tc := range map[string]struct {
		in    string
		syncs int
		lost  []string
	}{
		"an AppProject": {
			in:   "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team, namespace: argocd}\nspec: {}\n",
			lost: []string{"AppProject/argocd/team: Tether has no projects"},
		},
		"a Kustomization whose source is missing": {
			in:   "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: flux}\nspec: {sourceRef: {kind: GitRepository, name: gone}, prune: true}\n",
			lost: []string{"Kustomization/flux/k: spec.sourceRef: the GitRepository flux/gone is not among the input"},
		},
		"a Kustomization of a Bucket": {
			in: "apiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\nmetadata: {name: b, namespace: flux}\nspec: {}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: flux}\nspec: {sourceRef: {kind: Bucket, name: b}}\n",
			lost: []string{"Kustomization/flux/k: spec.sourceRef: Tether fetches git repositories, OCI artifacts and charts, not a Bucket"},
		},
		"Flux's kustomize fields on top of a render, carried; a field of theirs Tether has not": {
			in: "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: g, namespace: flux}\nspec: {url: https://git.example.com/r.git, ref: {tag: v1}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: flux}\nspec: {sourceRef: {kind: GitRepository, name: g}, namePrefix: p-, images: [{name: x, newTag: y, tagSuffix: z}], postBuild: {substitute: {a: b}}}\n",
			syncs: 1,
			lost:  []string{"Kustomization/flux/k: spec.images[0].tagSuffix: Tether has no counterpart"},
		},
		"another kind": {
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: d}\n",
			lost: []string{"ConfigMap/d/c: not an object of Flux or Argo CD"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := importer.Convert(objects(t, tc.in))
			if len(res.Syncs) != tc.syncs {
				t.Errorf("%d Syncs, want %d", len(res.Syncs), tc.syncs)
			}
			if len(res.Lost) != len(tc.lost) {
				t.Fatalf("lost %q, want %d lines", res.Lost, len(tc.lost))
			}
			for i, want := range tc.lost {
				if got := res.Lost[i].String(); !strings.HasPrefix(got, want) {
					t.Errorf("loss %d = %q, want it to start with %q", i, got, want)
				}
			}
		})
	}
}

func TestConvertArgoCDHelmParameters(t *testing.T) {
	in := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\n" +
		"spec:\n  destination: {server: https://kubernetes.default.svc}\n  syncPolicy: {automated: {}}\n" +
		"  source:\n    repoURL: https://charts.example.com\n    chart: web\n    targetRevision: 1.2.3\n    helm:\n" +
		"      valuesObject: {replicas: 1, image: {tag: a}}\n      parameters:\n" +
		"      - {name: replicas, value: \"3\"}\n      - {name: image.tag, value: \"b\"}\n" +
		"      - {name: 'annotations.example\\.com/x', value: \"true\", forceString: true}\n" +
		"      - {name: 'hosts[0]', value: h}\n"
	res := importer.Convert(objects(t, in))
	var got map[string]any
	if err := yaml.Unmarshal(res.Syncs[0].Spec.Helm.Values.Raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"replicas": float64(3), "image": map[string]any{"tag": "b"}, "annotations": map[string]any{"example.com/x": "true"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if len(res.Lost) != 1 || !strings.Contains(res.Lost[0].String(), "hosts[0]: a list index is not carried") {
		t.Errorf("lost %q, want the list index alone", res.Lost)
	}
}

// TestConvertArgoCDDirectory: an Application's directory options become
// spec.source.directory, with Argo CD's default (no recursion) written out,
// since Tether's default is to recurse.
func TestConvertArgoCDDirectory(t *testing.T) {
	no, yes := false, true
	const head = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\n" +
		"spec:\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n  syncPolicy: {automated: {}}\n" +
		"  source:\n    repoURL: https://git.example.com/r.git\n    targetRevision: main\n    path: web\n"
	for name, tc := range map[string]struct {
		in   string
		want *v1alpha1.DirectorySpec
		lost []string
	}{
		"no directory: Argo CD's top level alone":    {in: head, want: &v1alpha1.DirectorySpec{Recurse: &no}},
		"recurse, include and exclude":               {in: head + "    directory: {recurse: true, include: '*.yaml', exclude: '{config.json,env-usw2/*}'}\n", want: &v1alpha1.DirectorySpec{Recurse: &yes, Include: "*.yaml", Exclude: "{config.json,env-usw2/*}"}},
		"exclude alone keeps Argo CD's no recursion": {in: head + "    directory: {exclude: a.yaml}\n", want: &v1alpha1.DirectorySpec{Recurse: &no, Exclude: "a.yaml"}},
		"jsonnet is reported":                        {in: head + "    directory: {jsonnet: {tlas: [{name: a, value: b}]}}\n", want: &v1alpha1.DirectorySpec{Recurse: &no}, lost: []string{"Application/argocd/a: spec.source.directory.jsonnet: Tether has no counterpart"}},
	} {
		t.Run(name, func(t *testing.T) {
			res := importer.Convert(objects(t, tc.in))
			if len(res.Syncs) != 1 {
				t.Fatalf("%d Syncs; lost %q", len(res.Syncs), res.Lost)
			}
			if diff := cmp.Diff(tc.want, res.Syncs[0].Spec.Source.Directory); diff != "" {
				t.Errorf("spec.source.directory (-want +got):\n%s", diff)
			}
			var lost []string
			for _, l := range res.Lost {
				lost = append(lost, l.String())
			}
			if diff := cmp.Diff(tc.lost, lost); diff != "" {
				t.Errorf("lost (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConvertCarriesTheClusterAnObjectAppliesTo(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want v1alpha1.DestinationSpec
		lost []string
	}{
		"an Application for a registered cluster, by name": {
			in:   strings.Replace(strings.Replace(strings.Replace(app, "server: https://kubernetes.default.svc", "name: prod-eu", 1), "%s", "", 1), "%q", "main", 1),
			want: v1alpha1.DestinationSpec{Namespace: "web", Cluster: "prod-eu"},
		},
		"an Application for a cluster by its server's URL": {
			in:   strings.Replace(strings.Replace(strings.Replace(app, "https://kubernetes.default.svc", "https://prod.example.com", 1), "%s", "", 1), "%q", "main", 1),
			want: v1alpha1.DestinationSpec{Namespace: "web"},
			lost: []string{"Application/argocd/a: spec.destination.server: https://prod.example.com: register the cluster with Tether"},
		},
		"a Kustomization with a kubeconfig Secret": {
			in: "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: g, namespace: flux}\nspec: {url: https://git.example.com/r.git, ref: {branch: main}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: flux}\nspec: {sourceRef: {kind: GitRepository, name: g}, kubeConfig: {secretRef: {name: prod-kubeconfig, key: value.yaml}}}\n",
			want: v1alpha1.DestinationSpec{KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "prod-kubeconfig", Key: "value.yaml"}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := importer.Convert(objects(t, tc.in))
			if len(res.Syncs) != 1 {
				t.Fatalf("%d Syncs, want 1 (lost %q)", len(res.Syncs), res.Lost)
			}
			if diff := cmp.Diff(tc.want, res.Syncs[0].Spec.Destination); diff != "" {
				t.Errorf("spec.destination (-want +got):\n%s", diff)
			}
			if len(res.Lost) != len(tc.lost) {
				t.Fatalf("lost %q, want %d lines", res.Lost, len(tc.lost))
			}
			for i, want := range tc.lost {
				if got := res.Lost[i].String(); !strings.HasPrefix(got, want) {
					t.Errorf("loss %d = %q, want it to start with %q", i, got, want)
				}
			}
		})
	}
}

func TestConvertFluxGitRepositoryVerification(t *testing.T) {
	const kustomization = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: flux}\nspec: {sourceRef: {kind: GitRepository, name: g}}\n"
	for verify, want := range map[string]*v1alpha1.SourceVerify{
		"{mode: HEAD, secretRef: {name: pgp-public-keys}}":       {Mode: v1alpha1.VerifyHEAD, SecretRef: v1alpha1.LocalObjectReference{Name: "pgp-public-keys"}},
		"{mode: head, secretRef: {name: pgp-public-keys}}":       {Mode: v1alpha1.VerifyHEAD, SecretRef: v1alpha1.LocalObjectReference{Name: "pgp-public-keys"}},
		"{mode: TagAndHEAD, secretRef: {name: pgp-public-keys}}": {Mode: v1alpha1.VerifyTagAndHEAD, SecretRef: v1alpha1.LocalObjectReference{Name: "pgp-public-keys"}},
	} {
		in := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: g, namespace: flux}\nspec: {url: https://git.example.com/r.git, ref: {tag: v1}, verify: " + verify + "}\n---\n" + kustomization
		res := importer.Convert(objects(t, in))
		if len(res.Syncs) != 1 || len(res.Lost) != 0 {
			t.Fatalf("verify %s: %d Syncs, lost %q; want one Sync, nothing lost", verify, len(res.Syncs), res.Lost)
		}
		if diff := cmp.Diff(want, res.Syncs[0].Spec.Source.Verify); diff != "" {
			t.Errorf("verify %s: spec.source.verify (-want +got):\n%s", verify, diff)
		}
	}
}

func TestConvertFluxTagVerificationOfABranch(t *testing.T) {
	in := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: g, namespace: flux}\nspec: {url: https://git.example.com/r.git, ref: {branch: main}, verify: {mode: Tag, secretRef: {name: keys}}}\n---\n" +
		"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: flux}\nspec: {sourceRef: {kind: GitRepository, name: g}}\n"
	res := importer.Convert(objects(t, in))
	if len(res.Syncs) != 1 {
		t.Fatalf("%d Syncs, want 1", len(res.Syncs))
	}
	if v := res.Syncs[0].Spec.Source.Verify; v == nil || v.Mode != v1alpha1.VerifyHEAD {
		t.Errorf("spec.source.verify = %+v, want mode HEAD (the CRD refuses Tag on a branch)", v)
	}
	if len(res.Lost) != 1 || !strings.Contains(res.Lost[0].String(), "spec.verify.mode: Tag without a tag to follow") {
		t.Errorf("lost %q, want the mode reported", res.Lost)
	}
}

func TestConvertFluxOCIRepositorySources(t *testing.T) {
	const kustomization = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\n" +
		"spec: {sourceRef: {kind: OCIRepository, name: manifests}, path: ./deploy, prune: true, interval: 10m}\n---\n"
	const repo = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: manifests, namespace: flux-system}\n"
	for name, tc := range map[string]struct {
		spec string
		want v1alpha1.OCISource
		lost []string
	}{
		"a tag, credentials and cosign keys": {
			spec: "spec: {url: oci://ghcr.io/org/manifests, interval: 5m, ref: {tag: v1.2.0}, secretRef: {name: regcred}, verify: {provider: cosign, secretRef: {name: cosign-pub}}}\n",
			want: v1alpha1.OCISource{URL: "oci://ghcr.io/org/manifests", Ref: v1alpha1.OCIRef{Tag: "v1.2.0"}, SecretRef: &v1alpha1.LocalObjectReference{Name: "regcred"},
				Verify: &v1alpha1.OCIVerify{Provider: v1alpha1.VerifyCosign, SecretRef: v1alpha1.LocalObjectReference{Name: "cosign-pub"}}},
		},
		"no ref is the tag latest": {
			spec: "spec: {url: oci://ghcr.io/org/manifests, interval: 5m}\n",
			want: v1alpha1.OCISource{URL: "oci://ghcr.io/org/manifests", Ref: v1alpha1.OCIRef{Tag: "latest"}},
		},
		"a range wins over a tag, as in Flux": {
			spec: "spec: {url: oci://ghcr.io/org/manifests, interval: 5m, ref: {tag: latest, semver: '>=1.0'}}\n",
			want: v1alpha1.OCISource{URL: "oci://ghcr.io/org/manifests", Ref: v1alpha1.OCIRef{SemVer: ">=1.0"}},
			lost: []string{"OCIRepository/flux-system/manifests: spec.ref.tag"},
		},
		"keyless verification and cloud identity are reported, not carried": {
			spec: "spec: {url: oci://ghcr.io/org/manifests, interval: 5m, provider: aws, ref: {digest: 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}, verify: {provider: cosign, matchOIDCIdentity: [{issuer: x, subject: y}]}}\n",
			want: v1alpha1.OCISource{URL: "oci://ghcr.io/org/manifests", Ref: v1alpha1.OCIRef{Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
			lost: []string{"OCIRepository/flux-system/manifests: spec.provider", "OCIRepository/flux-system/manifests: spec.verify: Tether verifies signatures made with cosign key pairs"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := importer.Convert(objects(t, kustomization+repo+tc.spec))
			if len(res.Syncs) != 1 {
				t.Fatalf("%d Syncs; lost %v", len(res.Syncs), res.Lost)
			}
			s := res.Syncs[0].Spec
			if diff := cmp.Diff(&tc.want, s.Source.OCI); diff != "" {
				t.Errorf("spec.source.oci (-want +got):\n%s", diff)
			}
			if s.Source.URL != "" || s.Source.Path != "deploy" || s.Source.Interval == nil || s.Source.Interval.Minutes() != 5 {
				t.Errorf("spec.source url %q path %q interval %v; want no url, path deploy, the OCIRepository's 5m", s.Source.URL, s.Source.Path, s.Source.Interval)
			}
			lost := strings.Join(func() []string {
				var out []string
				for _, l := range res.Lost {
					out = append(out, l.String())
				}
				return out
			}(), "\n")
			for _, want := range tc.lost {
				if !strings.Contains(lost, want) {
					t.Errorf("lost:\n%s\nwant a line with %q", lost, want)
				}
			}
			if len(tc.lost) == 0 && strings.Contains(lost, "OCIRepository") {
				t.Errorf("lost of the OCIRepository:\n%s\nwant nothing", lost)
			}
		})
	}
}

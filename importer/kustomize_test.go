package importer_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/importer"
)

const fluxSource = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: g, namespace: flux}\n" +
	"spec: {url: https://git.example.com/r.git, ref: {branch: main}}\n---\n"

// TestConvertKustomizeFields: the fields a Flux Kustomization and an Argo CD
// Application's source.kustomize put on top of a render become
// spec.kustomize, and what it does not carry is reported.
func TestConvertKustomizeFields(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want *v1alpha1.Kustomize
		dest string
		lost []string
	}{
		"Flux: every field, in the shape Flux documents": {
			in: fluxSource + `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: k, namespace: flux}
spec:
  sourceRef: {kind: GitRepository, name: g}
  path: ./apps/prod
  targetNamespace: prod
  namePrefix: prod-
  nameSuffix: -eu
  commonMetadata:
    labels: {team: shop}
    annotations: {owner: shop@example.com}
  images:
  - {name: podinfo, newName: my-registry/podinfo, newTag: v1}
  - {name: podinfo, digest: "sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3"}
  components: [../components/ingress]
  patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: not-used}
      spec: {replicas: 2}
    target: {kind: Deployment, labelSelector: "app.kubernetes.io/part-of=my-app"}
  - patch: |
      - op: add
        path: /metadata/annotations/x
        value: y
    target: {group: apps, version: v1, kind: Deployment, name: podinfo, namespace: prod, annotationSelector: a=b}
`,
			dest: "prod",
			want: &v1alpha1.Kustomize{
				Namespace: "prod", NamePrefix: "prod-", NameSuffix: "-eu",
				CommonLabels: map[string]string{"team": "shop"}, CommonAnnotations: map[string]string{"owner": "shop@example.com"},
				Images: []v1alpha1.KustomizeImage{
					{Name: "podinfo", NewName: "my-registry/podinfo", NewTag: "v1"},
					{Name: "podinfo", Digest: "sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3"},
				},
				Components: []string{"../components/ingress"},
				Patches: []v1alpha1.KustomizePatch{
					{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: not-used}\nspec: {replicas: 2}",
						Target: &v1alpha1.KustomizeSelector{Kind: "Deployment", LabelSelector: "app.kubernetes.io/part-of=my-app"}},
					{Patch: "- op: add\n  path: /metadata/annotations/x\n  value: y\n",
						Target: &v1alpha1.KustomizeSelector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "podinfo", Namespace: "prod", AnnotationSelector: "a=b"}},
				},
			},
		},
		"Argo CD: every field it shares, images as kustomize edit set image writes them": {
			in: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: a, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: web}
  syncPolicy: {automated: {}}
  source:
    repoURL: https://git.example.com/r.git
    targetRevision: main
    path: web
    kustomize:
      namePrefix: prod-
      nameSuffix: -eu
      namespace: shop
      commonLabels: {team: shop}
      labelWithoutSelector: true
      commonAnnotations: {owner: shop@example.com}
      components: [../components/ingress]
      images:
      - gcr.io/heptio-images/ks-guestbook-demo:0.2
      - nginx=registry.example.com:5000/nginx:1.25
      - redis@sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3
      - busybox=my-registry/busybox
      - localhost:5000/app
      patches:
      - patch: '[{"op": "replace", "path": "/spec/replicas", "value": 3}]'
        target: {kind: Deployment, name: web}
      - path: patches/replicas.yaml
`,
			dest: "web",
			want: &v1alpha1.Kustomize{
				Namespace: "shop", NamePrefix: "prod-", NameSuffix: "-eu",
				CommonLabels: map[string]string{"team": "shop"}, CommonAnnotations: map[string]string{"owner": "shop@example.com"},
				Components: []string{"../components/ingress"},
				Images: []v1alpha1.KustomizeImage{
					{Name: "gcr.io/heptio-images/ks-guestbook-demo", NewTag: "0.2"},
					{Name: "nginx", NewName: "registry.example.com:5000/nginx", NewTag: "1.25"},
					{Name: "redis", Digest: "sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3"},
					{Name: "busybox", NewName: "my-registry/busybox"},
				},
				Patches: []v1alpha1.KustomizePatch{{
					Patch:  `[{"op": "replace", "path": "/spec/replicas", "value": 3}]`,
					Target: &v1alpha1.KustomizeSelector{Kind: "Deployment", Name: "web"},
				}},
			},
			lost: []string{
				"Application/argocd/a: spec.source.kustomize.images[4]: localhost:5000/app: not an image override",
				"Application/argocd/a: spec.source.kustomize.patches[1].path: a patch in a file of the repository",
			},
		},
		"Argo CD: common labels that Argo CD puts in selectors too": {
			in: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: a, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: web}
  syncPolicy: {automated: {}}
  source:
    repoURL: https://git.example.com/r.git
    targetRevision: main
    kustomize: {commonLabels: {team: shop}, forceCommonLabels: true}
`,
			dest: "web",
			want: &v1alpha1.Kustomize{CommonLabels: map[string]string{"team": "shop"}},
			lost: []string{
				"Application/argocd/a: spec.source.kustomize.commonLabels: carried onto the objects' metadata alone",
				"Application/argocd/a: spec.source.kustomize.forceCommonLabels: Tether has no counterpart",
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := importer.Convert(objects(t, tc.in))
			if len(res.Syncs) != 1 {
				t.Fatalf("%d Syncs; lost %q", len(res.Syncs), res.Lost)
			}
			if diff := cmp.Diff(tc.want, res.Syncs[0].Spec.Kustomize); diff != "" {
				t.Errorf("spec.kustomize (-want +got):\n%s", diff)
			}
			if got := res.Syncs[0].Spec.Destination.Namespace; got != tc.dest {
				t.Errorf("spec.destination.namespace %q; want %q", got, tc.dest)
			}
			if len(res.Lost) != len(tc.lost) {
				t.Fatalf("lost %q; want %d lines", res.Lost, len(tc.lost))
			}
			for i, want := range tc.lost {
				if got := res.Lost[i].String(); !strings.HasPrefix(got, want) {
					t.Errorf("loss %d = %q; want it to start with %q", i, got, want)
				}
			}
		})
	}
}

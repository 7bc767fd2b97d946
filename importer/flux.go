package importer

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// kustomization converts a Flux Kustomization; nil when its source cannot
// be carried.
func (c *converter) kustomization(o *unstructured.Unstructured) *v1alpha1.Sync {
	s := newSync(o)
	sp := &s.Spec
	ok := true
	handlers := map[string]func(any){
		"sourceRef":          func(v any) { ok = c.kustomizationSource(o, s, object(v)) },
		"path":               func(v any) { sp.Source.Path = cleanPath(str(v)) },
		"interval":           nil, // Tether corrects drift by watch; spec.source.interval is the GitRepository's
		"prune":              func(v any) { sp.Prune = ptr(boolean(v)) },
		"serviceAccountName": func(v any) { sp.ServiceAccountName = str(v) },
		"suspend":            func(v any) { sp.Suspend = boolean(v) },
		"wait":               func(v any) { sp.Wait = boolean(v) },
		"dependsOn":          func(v any) { sp.DependsOn = dependsOn(v) },
		"decryption":         func(v any) { sp.Decryption = c.decryption(o, object(v)) },
		"postBuild":          func(v any) { sp.PostBuild = c.postBuild(o, object(v)) },
		"healthCheckExprs":   func(v any) { sp.HealthChecks = healthChecks(v) },
		"deletionPolicy":     func(v any) { c.deletionPolicy(o, s, str(v)) },
		"kubeConfig":         func(v any) { c.kubeConfig(o, s, object(v)) },
		"healthChecks": func(any) {
			c.lose(o, "spec.healthChecks", "Tether assesses the health of every object it applies; spec.wait: true holds Ready for it")
		},
		"force": func(any) {
			c.lose(o, "spec.force", `set the annotation tether.dev/force: "true" on the objects to recreate`)
		},
	}
	// targetNamespace, namePrefix, ..., components: spec.kustomize (kustomize.go).
	maps.Copy(handlers, c.fluxKustomizeFields(o, s))
	c.fields(o, "spec", spec(o), handlers, noCounterpart)
	if !ok {
		return nil
	}
	return s
}

// kustomizationSource folds the source a Kustomization refers to into s.
func (c *converter) kustomizationSource(o *unstructured.Unstructured, s *v1alpha1.Sync, ref map[string]any) bool {
	kind, name, ns := str(ref["kind"]), str(ref["name"]), str(ref["namespace"])
	if ns == "" {
		ns = o.GetNamespace()
	}
	src, found := c.source(kind, ns, name)
	switch {
	case kind != "GitRepository" && kind != "OCIRepository":
		c.lose(o, "spec.sourceRef", "Tether fetches git repositories, OCI artifacts and charts, not a "+kind+": no Sync written")
		return false
	case !found:
		c.lose(o, "spec.sourceRef", "the "+kind+" "+ns+"/"+name+" is not among the input: no Sync written")
		return false
	case kind == "OCIRepository":
		c.ociRepository(src, s, ns != o.GetNamespace())
		return true
	}
	c.gitRepository(src, s, ns != o.GetNamespace())
	return true
}

// ociRepository folds a Flux OCIRepository into s's source (spec.source.oci):
// its URL, tag, semver or digest, credentials Secret and cosign keys. A
// Secret of another namespace than the Sync's cannot be named.
func (c *converter) ociRepository(src *unstructured.Unstructured, s *v1alpha1.Sync, otherNamespace bool) {
	sp := &s.Spec.Source
	o := &v1alpha1.OCISource{}
	sp.OCI = o
	secret := func(field string) func(any) *v1alpha1.LocalObjectReference {
		return func(v any) *v1alpha1.LocalObjectReference {
			if otherNamespace {
				c.lose(src, field, "a Sync reads its Secrets from its own namespace: copy the Secret into "+s.Namespace)
			}
			return &v1alpha1.LocalObjectReference{Name: str(object(v)["name"])}
		}
	}
	c.fields(src, "spec", spec(src), map[string]func(any){
		"url":       func(v any) { o.URL = str(v) },
		"interval":  func(v any) { sp.Interval = duration(v) },
		"secretRef": func(v any) { o.SecretRef = secret("spec.secretRef")(v) },
		"ref": func(v any) {
			c.fields(src, "spec.ref", object(v), map[string]func(any){
				"tag":    func(v any) { o.Ref.Tag = str(v) },
				"semver": func(v any) { o.Ref.SemVer = str(v) },
				"digest": func(v any) { o.Ref.Digest = str(v) },
			}, "Tether follows a tag, a semver range or a digest")
		},
		"verify": func(v any) {
			verify := object(v)
			if p := str(verify["provider"]); p != "" && p != v1alpha1.VerifyCosign {
				c.lose(src, "spec.verify.provider", "Tether verifies cosign signatures, not "+p+": verification not carried")
				return
			}
			if _, keyless := verify["matchOIDCIdentity"]; keyless || verify["secretRef"] == nil {
				c.lose(src, "spec.verify", "Tether verifies signatures made with cosign key pairs, not keyless ones: verification not carried")
				return
			}
			o.Verify = &v1alpha1.OCIVerify{Provider: v1alpha1.VerifyCosign, SecretRef: *secret("spec.verify.secretRef")(verify["secretRef"])}
		},
		"timeout": nil, // Tether bounds its fetches itself
		"provider": func(v any) {
			if p := str(v); p != "" && p != "generic" {
				c.lose(src, "spec.provider", "Tether reads registry credentials from spec.source.oci.secretRef, not from "+p+"'s workload identity")
			}
		},
		"insecure": func(v any) {
			if boolean(v) {
				c.lose(src, "spec.insecure", "Tether speaks plain http to loopback registries only")
			}
		},
		"certSecretRef": func(any) {
			c.lose(src, "spec.certSecretRef", "put the CA bundle in spec.source.oci.secretRef's Secret under the key caFile")
		},
		"layerSelector": func(v any) {
			sel := object(v)
			if mt := str(sel["mediaType"]); mt != "" && mt != "application/vnd.cncf.flux.content.v1.tar+gzip" {
				c.lose(src, "spec.layerSelector", "Tether reads the layer of Flux's content media type, or an artifact's only layer, not "+mt)
			}
			if op := str(sel["operation"]); op == "copy" {
				c.lose(src, "spec.layerSelector.operation", "Tether unpacks the layer; copy is not carried")
			}
		},
	}, noCounterpart)
	if o.Ref.Tag == "" && o.Ref.SemVer == "" && o.Ref.Digest == "" {
		o.Ref.Tag = "latest" // Flux's default, and Tether's
	}
	if o.Ref.Digest != "" && (o.Ref.Tag != "" || o.Ref.SemVer != "") {
		// Flux pulls the digest whatever else is set; Tether pins it.
		o.Ref.Tag, o.Ref.SemVer = "", ""
		c.lose(src, "spec.ref", "a digest with a tag or range is carried as the digest alone")
	}
	if o.Ref.Tag != "" && o.Ref.SemVer != "" {
		// Flux's semver takes precedence over its tag.
		o.Ref.Tag = ""
		c.lose(src, "spec.ref.tag", "a tag with a semver range is carried as the range alone, which Flux follows")
	}
}

// gitRepository folds a Flux GitRepository into s's source. A credentials
// Secret of another namespace than the Sync's cannot be named.
func (c *converter) gitRepository(src *unstructured.Unstructured, s *v1alpha1.Sync, otherNamespace bool) {
	sp := &s.Spec.Source
	c.fields(src, "spec", spec(src), map[string]func(any){
		"url":      func(v any) { sp.URL = str(v) },
		"interval": func(v any) { sp.Interval = duration(v) },
		"ref":      func(v any) { c.gitRef(src, sp, object(v)) },
		"secretRef": func(v any) {
			if otherNamespace {
				c.lose(src, "spec.secretRef", "a Sync reads credentials from its own namespace: copy the Secret into "+s.Namespace)
			}
			sp.SecretRef = &v1alpha1.LocalObjectReference{Name: str(object(v)["name"])}
		},
		"timeout": nil, // Tether bounds its fetches itself
		"verify":  func(v any) { c.gitVerify(src, sp, object(v), otherNamespace, s.Namespace) },
	}, noCounterpart)
	if v := sp.Verify; v != nil && v.ModeOrDefault() != v1alpha1.VerifyHEAD && sp.Ref.Tag == "" && sp.Ref.SemVer == "" {
		// Tether verifies a tag only when it follows one (the CRD refuses a
		// Tag mode with a branch or a commit).
		c.lose(src, "spec.verify.mode", v.Mode+" without a tag to follow: carried as HEAD, which needs every commit applied signed")
		v.Mode = v1alpha1.VerifyHEAD
	}
}

// gitVerify folds a GitRepository's spec.verify into s's: the same modes, and
// a Secret whose values Tether reads as Flux does (armored OpenPGP keys), SSH
// allowed_signers lines besides.
func (c *converter) gitVerify(src *unstructured.Unstructured, sp *v1alpha1.SourceSpec, verify map[string]any, otherNamespace bool, namespace string) {
	v := &v1alpha1.SourceVerify{}
	c.fields(src, "spec.verify", verify, map[string]func(any){
		"mode": func(m any) { v.Mode = str(m) },
		"secretRef": func(r any) {
			if otherNamespace {
				c.lose(src, "spec.verify.secretRef", "a Sync reads its trusted keys from its own namespace: copy the Secret into "+namespace)
			}
			v.SecretRef = v1alpha1.LocalObjectReference{Name: str(object(r)["name"])}
		},
	}, noCounterpart)
	if v.Mode == "head" {
		v.Mode = v1alpha1.VerifyHEAD // Flux's first spelling
	}
	sp.Verify = v
}

func (c *converter) gitRef(src *unstructured.Unstructured, sp *v1alpha1.SourceSpec, ref map[string]any) {
	c.fields(src, "spec.ref", ref, map[string]func(any){
		"branch": func(v any) { sp.Ref.Branch = str(v) },
		"tag":    func(v any) { sp.Ref.Tag = str(v) },
		"semver": func(v any) { sp.Ref.SemVer = str(v) },
		"commit": func(v any) { sp.Ref.Commit = str(v) },
	}, "Tether follows a branch, a tag, a semver range or a commit")
	if sp.Ref.Commit != "" && (sp.Ref.Branch != "" || sp.Ref.Tag != "") {
		// Flux checks the commit out of the branch or tag; Tether pins it.
		sp.Ref.Branch, sp.Ref.Tag = "", ""
		c.lose(src, "spec.ref", "a commit with a branch or tag is carried as the commit alone")
	}
}

// helmRelease converts a Flux HelmRelease; nil when its chart cannot be
// carried.
func (c *converter) helmRelease(o *unstructured.Unstructured) *v1alpha1.Sync {
	s := newSync(o)
	sp := &s.Spec
	sp.Helm = &v1alpha1.HelmSpec{}
	sp.Destination.Namespace = o.GetNamespace()
	ok := false
	c.fields(o, "spec", spec(o), map[string]func(any){
		"chart":              func(v any) { ok = c.chartTemplate(o, s, object(v)) },
		"chartRef":           func(v any) { ok = c.chartRef(o, s, object(v)) },
		"interval":           func(v any) { sp.Source.Interval = duration(v) },
		"releaseName":        func(v any) { sp.Helm.ReleaseName = str(v) },
		"targetNamespace":    func(v any) { sp.Destination.Namespace = str(v) },
		"serviceAccountName": func(v any) { sp.ServiceAccountName = str(v) },
		"suspend":            func(v any) { sp.Suspend = boolean(v) },
		"dependsOn":          func(v any) { sp.DependsOn = dependsOn(v) },
		"values":             func(v any) { sp.Helm.Values = rawJSON(v) },
		"valuesFrom":         func(v any) { sp.Helm.ValuesFrom = c.valuesFrom(o, v) },
		"install":            func(v any) { c.crds(o, s, "spec.install", object(v)) },
		"kubeConfig":         func(v any) { c.kubeConfig(o, s, object(v)) },
		"upgrade":            func(v any) { c.crds(o, s, "spec.upgrade", object(v)) },
	}, "Tether applies a chart's objects with server-side apply, not as a Helm release: "+noCounterpart)
	if !ok {
		return nil
	}
	return s
}

// chartTemplate folds spec.chart (a HelmChart or OCIRepository template) into s.
func (c *converter) chartTemplate(o *unstructured.Unstructured, s *v1alpha1.Sync, chart map[string]any) bool {
	cs := object(chart["spec"])
	if str(chart["kind"]) == "OCIRepository" {
		url, ref := str(cs["url"]), object(cs["ref"])
		i := strings.LastIndex(url, "/")
		if i < 0 {
			c.lose(o, "spec.chart.spec.url", "not an oci:// URL of a chart: no Sync written")
			return false
		}
		s.Spec.Source.Chart = &v1alpha1.ChartSource{Repository: url[:i], Name: url[i+1:], Version: firstOf(str(ref["semver"]), str(ref["tag"]))}
		c.fields(o, "spec.chart.spec", cs, map[string]func(any){"url": nil, "ref": nil, "interval": nil}, noCounterpart)
		return true
	}
	ref := object(cs["sourceRef"])
	kind, ns := str(ref["kind"]), firstOf(str(ref["namespace"]), o.GetNamespace())
	src, found := c.source(kind, ns, str(ref["name"]))
	if !found {
		c.lose(o, "spec.chart.spec.sourceRef", "the "+kind+" "+ns+"/"+str(ref["name"])+" is not among the input: no Sync written")
		return false
	}
	c.fields(o, "spec.chart.spec", cs, map[string]func(any){
		"chart": nil, "version": nil, "sourceRef": nil, "interval": nil,
		"valuesFiles": func(v any) { s.Spec.Helm.ValuesFiles = stringList(v) },
	}, noCounterpart)
	switch kind {
	case "HelmRepository":
		c.helmRepository(src, s, str(cs["chart"]), str(cs["version"]))
	case "GitRepository":
		c.gitRepository(src, s, ns != o.GetNamespace())
		s.Spec.Source.Path = cleanPath(str(cs["chart"]))
	default:
		c.lose(o, "spec.chart.spec.sourceRef", "Tether reads charts from chart repositories, OCI registries and git, not a "+kind+": no Sync written")
		return false
	}
	return true
}

// chartRef folds spec.chartRef (an OCIRepository) into s.
func (c *converter) chartRef(o *unstructured.Unstructured, s *v1alpha1.Sync, ref map[string]any) bool {
	kind, ns := str(ref["kind"]), firstOf(str(ref["namespace"]), o.GetNamespace())
	src, found := c.source(kind, ns, str(ref["name"]))
	if kind != "OCIRepository" || !found {
		c.lose(o, "spec.chartRef", "the "+kind+" "+ns+"/"+str(ref["name"])+" is not an OCIRepository among the input: no Sync written")
		return false
	}
	sp := spec(src)
	url, r := str(sp["url"]), object(sp["ref"])
	i := strings.LastIndex(url, "/")
	s.Spec.Source.Chart = &v1alpha1.ChartSource{Repository: url[:max(i, 0)], Name: url[i+1:], Version: firstOf(str(r["semver"]), str(r["tag"]))}
	c.fields(src, "spec", sp, map[string]func(any){"url": nil, "ref": nil, "interval": nil, "layerSelector": nil,
		"secretRef": func(v any) { s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: str(object(v)["name"])} },
	}, noCounterpart)
	return true
}

// helmRepository folds a HelmRepository, and the chart of it, into s.
func (c *converter) helmRepository(src *unstructured.Unstructured, s *v1alpha1.Sync, chart, version string) {
	sp := spec(src)
	s.Spec.Source.Chart = &v1alpha1.ChartSource{Repository: str(sp["url"]), Name: chart, Version: version}
	c.fields(src, "spec", sp, map[string]func(any){
		"url": nil, "interval": nil, "type": nil, "timeout": nil,
		"secretRef": func(v any) { s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: str(object(v)["name"])} },
	}, noCounterpart)
}

// crds carries install.crds / upgrade.crds: Skip as skipCRDs.
func (c *converter) crds(o *unstructured.Unstructured, s *v1alpha1.Sync, path string, m map[string]any) {
	c.fields(o, path, m, map[string]func(any){
		"crds": func(v any) { s.Spec.Helm.SkipCRDs = s.Spec.Helm.SkipCRDs || str(v) == "Skip" },
	}, "Tether applies a chart's objects with server-side apply, not as a Helm release: "+noCounterpart)
}

func (c *converter) valuesFrom(o *unstructured.Unstructured, v any) []v1alpha1.ValuesReference {
	var out []v1alpha1.ValuesReference
	for i, e := range list(v) {
		m := object(e)
		ref := v1alpha1.ValuesReference{Kind: str(m["kind"]), Name: str(m["name"]), Key: str(m["valuesKey"])}
		c.fields(o, "spec.valuesFrom["+strconv.Itoa(i)+"]", m, map[string]func(any){"kind": nil, "name": nil, "valuesKey": nil}, noCounterpart)
		out = append(out, ref)
	}
	return out
}

func (c *converter) decryption(o *unstructured.Unstructured, m map[string]any) *v1alpha1.Decryption {
	d := &v1alpha1.Decryption{Provider: str(m["provider"])}
	c.fields(o, "spec.decryption", m, map[string]func(any){
		"provider":  nil,
		"secretRef": func(v any) { d.SecretRef = &v1alpha1.LocalObjectReference{Name: str(object(v)["name"])} },
	}, "Tether decrypts with age and OpenPGP keys of a Secret: "+noCounterpart)
	return d
}

func (c *converter) postBuild(o *unstructured.Unstructured, m map[string]any) *v1alpha1.PostBuild {
	pb := &v1alpha1.PostBuild{}
	c.fields(o, "spec.postBuild", m, map[string]func(any){
		"substitute": func(v any) {
			pb.Substitute = map[string]string{}
			for k, x := range object(v) {
				pb.Substitute[k] = str(x)
			}
		},
		"substituteFrom": func(v any) {
			for _, e := range list(v) {
				r := object(e)
				pb.SubstituteFrom = append(pb.SubstituteFrom, v1alpha1.SubstituteReference{Kind: str(r["kind"]), Name: str(r["name"]), Optional: boolean(r["optional"])})
			}
		},
	}, noCounterpart)
	return pb
}

func (c *converter) deletionPolicy(o *unstructured.Unstructured, s *v1alpha1.Sync, p string) {
	switch p {
	case "Delete", "Orphan":
		s.Spec.DeletionPolicy = v1alpha1.DeletionPolicy(p)
	case "MirrorPrune", "":
	default:
		c.lose(o, "spec.deletionPolicy", p+": Tether deletes (Delete) or orphans (Orphan), and does not wait for termination")
	}
}

func dependsOn(v any) []v1alpha1.DependencyReference {
	var out []v1alpha1.DependencyReference
	for _, e := range list(v) {
		m := object(e)
		out = append(out, v1alpha1.DependencyReference{Name: str(m["name"]), Namespace: str(m["namespace"])})
	}
	return out
}

func healthChecks(v any) []v1alpha1.HealthCheck {
	var out []v1alpha1.HealthCheck
	for _, e := range list(v) {
		m := object(e)
		out = append(out, v1alpha1.HealthCheck{APIVersion: str(m["apiVersion"]), Kind: str(m["kind"]),
			Current: str(m["current"]), InProgress: str(m["inProgress"]), Failed: str(m["failed"])})
	}
	return out
}

// cleanPath turns Flux's and Argo CD's "./apps" into Tether's "apps".
func cleanPath(p string) string {
	p = strings.TrimPrefix(strings.TrimSuffix(p, "/"), "./")
	if p == "." {
		return ""
	}
	return p
}

func duration(v any) *metav1.Duration {
	d, err := time.ParseDuration(str(v))
	if err != nil {
		return nil
	}
	return &metav1.Duration{Duration: d}
}

func rawJSON(v any) *apiextensionsv1.JSON {
	b, err := json.Marshal(v)
	if err != nil || v == nil {
		return nil
	}
	return &apiextensionsv1.JSON{Raw: b}
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// kubeConfig folds spec.kubeConfig into s's destination: the same Secret of the
// same namespace, with the same keys ("value", then "value.yaml").
func (c *converter) kubeConfig(o *unstructured.Unstructured, s *v1alpha1.Sync, kc map[string]any) {
	c.fields(o, "spec.kubeConfig", kc, map[string]func(any){
		"secretRef": func(v any) {
			ref := object(v)
			s.Spec.Destination.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: str(ref["name"]), Key: str(ref["key"])}}
		},
	}, "Tether reads a kubeconfig with inline credentials from a Secret (docs/multi-cluster.md)")
}

package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
	"tether.dev/tether/test/harness"
)

// InstallCRDs creates every CustomResourceDefinition in the YAML files of dir (for
// Tether's own: deploy/base/crd) unless it exists already, and waits until each is
// Established. Tests sharing a control plane may all call it.
func InstallCRDs(t testing.TB, cfg *rest.Config, dir string) {
	t.Helper()
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRD files in %s (%v)", dir, err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing %s: %v", crd.Name, err)
		}
		harness.Eventually(t, time.Minute, "CRD "+crd.Name+" is established", func(ctx context.Context) (bool, error) {
			return crdEstablished(ctx, crds, crd.Name)
		})
	}
}

// crdEstablished reports whether the CustomResourceDefinition name is
// Established: its resource served.
func crdEstablished(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, name string) (bool, error) {
	live, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, c := range live.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

package main

import (
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNeverTakeOverManagersFlag(t *testing.T) {
	f, err := parseControllerFlags([]string{"--never-take-over-managers", "kubectl, break-glass", "--never-take-over-managers=ops"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kubectl", "break-glass", "ops"}, f.neverTakeOver); diff != "" {
		t.Errorf("never take over (-want +got):\n%s", diff)
	}
}

func TestTenancyFlags(t *testing.T) {
	f, err := parseControllerFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !f.allowCrossNamespace || f.defaultServiceAccount != "" || f.watchNamespaces != nil {
		t.Errorf("defaults: allowCrossNamespace %v, defaultServiceAccount %q, watchNamespaces %v; want true, \"\", none",
			f.allowCrossNamespace, f.defaultServiceAccount, f.watchNamespaces)
	}
	f, err = parseControllerFlags([]string{"--allow-cross-namespace=false", "--default-service-account", "deployer", "--watch-namespaces", "team-a, team-b,"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.allowCrossNamespace || f.defaultServiceAccount != "deployer" {
		t.Errorf("allowCrossNamespace %v, defaultServiceAccount %q; want false, deployer", f.allowCrossNamespace, f.defaultServiceAccount)
	}
	if diff := cmp.Diff([]string{"team-a", "team-b"}, f.watchNamespaces); diff != "" {
		t.Errorf("watch namespaces (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-a", "team-b"}, sortedKeys(cacheOptions(f.watchNamespaces).DefaultNamespaces)); diff != "" {
		t.Errorf("cache namespaces (-want +got):\n%s", diff)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

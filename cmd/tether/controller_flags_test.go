package main

import (
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"tether.dev/tether/agent"
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
	if diff := cmp.Diff([]string{"team-a", "team-b"}, sortedKeys(agent.CacheOptions(f.agentOptions()).DefaultNamespaces)); diff != "" {
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

func TestLimitFlagsDefaultToWhatFitsTheShippedMemoryLimit(t *testing.T) {
	f, err := parseControllerFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.source.AllowFileURLs {
		t.Error("file:// URLs are allowed by default; want them refused unless --allow-file-urls")
	}
	if f.minInterval != 10*time.Second {
		t.Errorf("--min-interval defaults to %s, want 10s", f.minInterval)
	}
	// Two renders at their peak and the render cache stay well under 512 MiB.
	if peak := int64(f.source.MaxConcurrentRenders)*(f.source.MaxTreeSize+4*f.source.MaxRenderedBytes) + 3*f.source.RenderCacheBytes; peak > 384<<20 {
		t.Errorf("render limits allow about %d MiB at their peak; want them to fit a 512 MiB agent", peak>>20)
	}

	f, err = parseControllerFlags([]string{"--allow-file-urls", "--min-interval=1s", "--max-fetches-per-host=3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !f.source.AllowFileURLs || f.minInterval != time.Second || f.source.MaxFetchesPerHost != 3 {
		t.Errorf("flags parsed to allowFileURLs=%t minInterval=%s maxFetchesPerHost=%d", f.source.AllowFileURLs, f.minInterval, f.source.MaxFetchesPerHost)
	}
}

func TestShardFlagSelectsSyncsAndALeasePerShard(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		selector string // "" for every Sync
		lease    string
	}{
		{nil, "", "tether.dev"},
		{[]string{"--shard", "eu-1"}, "tether.dev/shard=eu-1", "tether.dev-shard-eu-1"},
		{[]string{"--shard="}, "!tether.dev/shard", "tether.dev-unsharded"},
	} {
		f, err := parseControllerFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var got string
		if sel := f.shard.selector(); sel != nil {
			got = sel.String()
		}
		if got != tc.selector || f.shard.leaseName() != tc.lease {
			t.Errorf("%v: selector %q, lease %q; want %q, %q", tc.args, got, f.shard.leaseName(), tc.selector, tc.lease)
		}
		if by := agent.CacheOptions(f.agentOptions()).ByObject; (len(by) == 1) != (tc.selector != "") {
			t.Errorf("%v: cache options by object = %v", tc.args, by)
		}
	}
	if _, err := parseControllerFlags([]string{"--shard", "not a label/value"}, io.Discard); err == nil {
		t.Error("--shard with a value that is no label value was accepted")
	}
}

func TestLeaseFlagsRefuseTimingsUnderWhichTwoReplicasCouldLead(t *testing.T) {
	f, err := parseControllerFlags([]string{"--leader-election-lease-duration=20s", "--leader-election-renew-deadline=12s", "--leader-election-retry-period=3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (leaseTimings{20 * time.Second, 12 * time.Second, 3 * time.Second}); f.lease != want {
		t.Errorf("lease timings %+v, want %+v", f.lease, want)
	}
	for _, args := range [][]string{
		{"--leader-election-renew-deadline=15s"}, // not shorter than the default lease duration
		{"--leader-election-lease-duration=5s"},  // shorter than the default renew deadline
		{"--leader-election-retry-period=0s"},
	} {
		if _, err := parseControllerFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}

func TestAnyPortBecomesThePortTaken(t *testing.T) {
	for _, addr := range []string{"0", ":8080", "127.0.0.1:9090", "not an address"} {
		if got, err := portTaken(addr); err != nil || got != addr {
			t.Errorf("portTaken(%q) = %q, %v; want it unchanged", addr, got, err)
		}
	}
	got, err := portTaken("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(got)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Errorf("portTaken(127.0.0.1:0) = %q (%v); want 127.0.0.1 and the port taken", got, err)
	}
	l, err := net.Listen("tcp", got)
	if err != nil {
		t.Fatalf("the port taken cannot be bound: %v", err)
	}
	_ = l.Close()
}

// The agent a test rig runs (agent.DefaultOptions) is the agent `tether
// controller` runs without flags: their defaults must not drift apart.
func TestFlagDefaultsAreTheAgentDefaults(t *testing.T) {
	f, err := parseControllerFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := f.agentOptions()
	// The cache directory and home are the machine's; the version is the build's.
	ignore := cmpopts.IgnoreFields(agent.Options{}, "Source", "CacheDir", "Home", "Version")
	if diff := cmp.Diff(agent.DefaultOptions(), got, ignore); diff != "" {
		t.Errorf("agent options of tether controller without flags (-agent.DefaultOptions +flags):\n%s", diff)
	}
	if want := agent.DefaultOptions().Source; got.Source.Timeout != want.Timeout || got.Source.MaxCacheBytes != want.MaxCacheBytes || got.Source.AllowFileURLs != want.AllowFileURLs {
		t.Errorf("source options: timeout %v, max cache bytes %d, file URLs %v; want %v, %d, %v",
			got.Source.Timeout, got.Source.MaxCacheBytes, got.Source.AllowFileURLs, want.Timeout, want.MaxCacheBytes, want.AllowFileURLs)
	}
}

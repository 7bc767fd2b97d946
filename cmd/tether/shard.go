package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"tether.dev/tether/api/v1alpha1"
)

// shardFlag is --shard. Unset, the agent serves every Sync. Set to a name, it
// serves only the Syncs labelled tether.dev/shard=<name>; set to "", only the Syncs
// without that label. Each shard elects its own leader.
type shardFlag struct {
	name string
	set  bool
}

func (s *shardFlag) String() string { return s.name }

func (s *shardFlag) Set(v string) error {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("--shard %q is not a label value: %s", v, strings.Join(errs, "; "))
	}
	s.name, s.set = v, true
	return nil
}

// selector selects the Syncs the shard serves; nil (every Sync) when unsharded.
func (s shardFlag) selector() labels.Selector {
	if !s.set {
		return nil
	}
	op, values := selection.Equals, []string{s.name}
	if s.name == "" {
		op, values = selection.DoesNotExist, nil
	}
	req, err := labels.NewRequirement(v1alpha1.ShardLabel, op, values)
	if err != nil { // Set validated the name
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// leaseName is the leader election Lease of the shard: one per shard, so that each
// shard has a leader of its own.
func (s shardFlag) leaseName() string {
	switch {
	case !s.set:
		return "tether.dev"
	case s.name == "":
		return "tether.dev-unsharded"
	}
	return "tether.dev-shard-" + s.name
}

// describe names the shard in the agent's start-up log.
func (s shardFlag) describe() string {
	switch {
	case !s.set:
		return "(all Syncs)"
	case s.name == "":
		return "(Syncs without " + v1alpha1.ShardLabel + ")"
	}
	return s.name
}

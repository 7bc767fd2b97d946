package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
)

// remoteFlags say how a command reaches the cluster a Sync applies to when it
// is not the one the command talks to (spec.destination): the commands that
// read its objects (diff, events).
type remoteFlags struct {
	kubeconfig string
	namespace  string
}

func (f *remoteFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&f.kubeconfig, "cluster-kubeconfig", "", "For a Sync that applies to another cluster (spec.destination.kubeConfig or cluster): a kubeconfig file of that cluster, whose objects to read. Default: the kubeconfig the Sync names, read from the cluster as the user of the command.")
	fl.StringVar(&f.namespace, "cluster-namespace", "tether-system", "The namespace where clusters are registered (the agent's --cluster-namespace), for a Sync whose spec.destination.cluster names one.")
}

// connect returns a config and a client of the cluster s applies to: through
// --cluster-kubeconfig, or the kubeconfig s names, read through c as the user
// (who must be allowed to read that Secret) and used as the agent uses it:
// inline credentials only, no credential plugin. One request up front turns an
// unreachable cluster into one error.
func (f *remoteFlags) connect(ctx context.Context, c client.Client, s *v1alpha1.Sync) (*rest.Config, client.Client, error) {
	var data []byte
	var err error
	dest := s.Spec.Destination
	switch {
	case f.kubeconfig != "":
		data, err = os.ReadFile(f.kubeconfig)
	case dest.Cluster != "":
		data, err = tethersync.ReadKubeConfig(ctx, c, f.namespace, dest.Cluster, v1alpha1.ClusterKubeConfigKey)
	default:
		data, err = tethersync.ReadKubeConfig(ctx, c, s.Namespace, dest.KubeConfig.SecretRef.Name, dest.KubeConfig.SecretRef.Key)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the Sync applies to cluster %s: %w (or give its kubeconfig with --cluster-kubeconfig)", dest.ClusterName(), err)
	}
	cfg, err := tethersync.RESTConfigOf(data, false)
	if err != nil {
		return nil, nil, fmt.Errorf("the kubeconfig of cluster %s: %w", dest.ClusterName(), err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return nil, nil, fmt.Errorf("reaching cluster %s at %s: %w", dest.ClusterName(), cfg.Host, err)
	}
	rc, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		return nil, nil, err
	}
	return cfg, rc, nil
}

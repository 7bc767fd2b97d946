package agent

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/apply"
	tethersync "tether.dev/tether/sync"
)

// impersonator returns the IdentityFunc that builds, per service account, a client
// whose every request impersonates it, and an apply.Manager over that client with
// the agent's own ManagerOptions (each account's verified cache has the same bound). The
// clients share the agent's RESTMapper, one rate limiter (--kube-api-qps and
// --kube-api-burst for all accounts together, not for each), and client-go shares
// the TLS transport.
func impersonator(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, opts apply.ManagerOptions) tethersync.IdentityFunc {
	var limiter flowcontrol.RateLimiter
	if cfg.QPS > 0 {
		limiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	return func(user string) (tethersync.Identity, error) {
		icfg := rest.CopyConfig(cfg)
		icfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		icfg.RateLimiter = limiter
		c, err := client.NewWithWatch(icfg, client.Options{Scheme: scheme, Mapper: mapper})
		if err != nil {
			return tethersync.Identity{}, fmt.Errorf("creating a client acting as %s: %w", user, err)
		}
		own, err := opts.WithClientsFor(icfg) // the agent's, but for the clients acting as user
		if err != nil {
			return tethersync.Identity{}, fmt.Errorf("acting as %s: %w", user, err)
		}
		m := apply.NewManager(c, own)
		return tethersync.Identity{Applier: m, Secrets: c, Finder: m, Pods: c}, nil
	}
}

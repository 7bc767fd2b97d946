package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
)

// What the installs need of the cluster (docs/install.md, Requirements): the
// namespaced install's ValidatingAdmissionPolicy is GA from 1.30.
const (
	minKubernetes           = "1.27"
	minKubernetesNamespaced = "1.30"
)

// The agent as the embedded install names it.
const (
	agentNamespace  = "tether-system"
	agentDeployment = "tether"
	agentService    = "tether"
	metricsPortName = "https-metrics"
)

// checkResult is the answer of one check: a line that says what was found
// and, when it failed, what to do.
type checkResult struct {
	status checkStatus
	found  string
	todo   string // what to do, when status is checkFailed or checkWarned
}

type checkStatus int

const (
	checkPassed checkStatus = iota
	checkWarned             // worth saying, not a failure
	checkFailed
)

func checkPass(format string, args ...any) checkResult {
	return checkResult{status: checkPassed, found: fmt.Sprintf(format, args...)}
}

func checkWarn(todo, format string, args ...any) checkResult {
	return checkResult{status: checkWarned, found: fmt.Sprintf(format, args...), todo: todo}
}

func checkFail(todo, format string, args ...any) checkResult {
	return checkResult{status: checkFailed, found: fmt.Sprintf(format, args...), todo: todo}
}

// String is the line printed for r: "✓ found", "! found: todo", "✗ found: todo".
func (r checkResult) String() string {
	mark := map[checkStatus]string{checkPassed: "✓", checkWarned: "!", checkFailed: "✗"}[r.status]
	if r.todo == "" {
		return mark + " " + r.found
	}
	return mark + " " + r.found + ": " + r.todo
}

// newCheckCommand checks a cluster before and after `tether install`.
func newCheckCommand(kube *kubeFlags) *cobra.Command {
	var pre, namespaced bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that the cluster can run Tether (--pre), or that Tether runs in it",
		Long: "Without --pre, check the install: the CRDs are installed and serve the schema of this version of tether, the agent Deployment " + agentNamespace + "/" + agentDeployment + " is available, a replica holds the leader Lease, the agent's Service has a ready endpoint for its metrics port, and the agent's version is the CLI's (a difference is a warning).\n\n" +
			"With --pre, check what an install needs: the API server answers, its Kubernetes version is at least " + minKubernetes + " (" + minKubernetesNamespaced + " with --namespaced), and you may create what the install creates (CRDs, ClusterRoles and their bindings, Namespaces).\n\n" +
			"Each check prints one line: ✓ passed, ! a warning, ✗ failed with what to do. The command exits 1 when a check failed.",
		Example: `  tether check --pre
  tether install
  tether check`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kube.restConfig("check")
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			var results []checkResult
			if pre {
				results = preChecks(cmd.Context(), cs, cfg.Host, namespaced)
			} else {
				results, err = installChecks(cmd.Context(), cs, cfg)
				if err != nil {
					return err
				}
			}
			return report(cmd.OutOrStdout(), results)
		},
	}
	cmd.Flags().BoolVar(&pre, "pre", false, "Check what an install needs, before installing.")
	cmd.Flags().BoolVar(&namespaced, "namespaced", false, "With --pre: for the namespaced (multi-tenant) install, which needs Kubernetes "+minKubernetesNamespaced+".")
	kube.bind(cmd)
	return cmd
}

// report prints one line per result and fails when a check failed.
func report(w io.Writer, results []checkResult) error {
	n := 0
	for _, r := range results {
		fmt.Fprintln(w, r)
		if r.status == checkFailed {
			n++
		}
	}
	if n > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d checks failed", n, len(results))}
	}
	return nil
}

// preChecks are the checks of --pre. When the API server does not answer, that
// is the one result.
func preChecks(ctx context.Context, cs kubernetes.Interface, host string, namespaced bool) []checkResult {
	reach, gitVersion := checkReachable(cs, host)
	if reach.status == checkFailed {
		return []checkResult{reach}
	}
	least := minKubernetes
	if namespaced {
		least = minKubernetesNamespaced
	}
	results := []checkResult{reach, checkServerVersion(gitVersion, least)}
	return append(results, checkInstallRights(ctx, cs, namespaced)...)
}

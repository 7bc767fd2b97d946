// Command demo is `make demo`: it starts a real local control plane (etcd,
// kube-apiserver, controller-manager, scheduler and kwok's fake node), creates a local
// git repository holding an example app, installs the Sync CRD, runs the tether agent
// built from this tree, creates a Sync, and shows a commit flowing into the cluster.
// It stays up until Ctrl-C and then removes everything it started.
//
// This is a developer tool: unlike the agent, it may shell out to git and kubectl.
package main

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tether.dev/tether/test/controlplane"
)

//go:embed app/*.yaml
var app embed.FS

// demo is the state of one run.
type demo struct {
	root    string // .demo/ in the project
	tether  string // the agent binary
	kubectl string
	cp      *controlplane.ControlPlane
	agent   *exec.Cmd
	ui      *exec.Cmd // tether ui, serving the web UI as the demo cluster's admin
	// metrics, probes and webhook are the agent's addresses, printed for the user.
	metrics, probes, webhook string
	work                     string // work clone of the demo repository
	repoURL                  string
}

func main() {
	once := flag.Bool("once", false, "exit after showing the commit arrive, instead of waiting for Ctrl-C")
	flag.Parse()
	restore := takeTerminal()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	d := &demo{}
	err := d.run(ctx, *once)
	d.cleanup()
	stop()
	restore()
	// After a Ctrl-C, whatever the demo was doing failed because it was asked to
	// stop: that is not an error to report.
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func (d *demo) run(ctx context.Context, once bool) error {
	if err := d.setup(); err != nil {
		return err
	}
	step("starting a local control plane: etcd, kube-apiserver, controller-manager, scheduler, kwok")
	cp, err := controlplane.Start(ctx, controlplane.Options{Workloads: true, Dir: filepath.Join(d.root, "cluster")})
	if err != nil {
		return err
	}
	d.cp = cp
	step("creating a local git repository with an example app (Namespace, Deployment, Service, ConfigMap)")
	first, err := d.createRepo()
	if err != nil {
		return err
	}
	step("installing the Sync CRD")
	if err := d.kube("apply", "--server-side", "-f", filepath.Join("deploy", "base", "crd")); err != nil {
		return err
	}
	step("starting the tether agent (log: .demo/tether.log)")
	if err := d.startAgent(); err != nil {
		return err
	}
	step("starting the web UI (tether ui, acting as the demo cluster's admin; log: .demo/ui.log)")
	if err := d.startUI(); err != nil {
		return err
	}
	step("creating a Sync that follows branch main of " + d.repoURL)
	if err := d.createSync(); err != nil {
		return err
	}
	if err := d.waitApplied(ctx, first); err != nil {
		return err
	}
	step("committing a change: 3 replicas, a new greeting and release 2 (a rollout of new pods)")
	second, err := d.commitChange()
	if err != nil {
		return err
	}
	if err := d.waitApplied(ctx, second); err != nil {
		return err
	}
	fmt.Printf("\nThe cluster follows git. Try it yourself, in another terminal:\n"+
		"  export KUBECONFIG=%s PATH=%s:%s:$PATH\n"+
		"  kubectl get syncs -A -w\n"+
		"  cd %s && $EDITOR deployment.yaml && git commit -am change && git push\n"+
		"  curl -s http://%s/metrics | grep ^tether_sync_info\n"+
		"  tether get -A && tether tree web && tether history web\n"+
		"  open the web UI at the ui: address above (its sign-in link works once; for another, run tether ui)\n",
		d.cp.KubeconfigPath(), filepath.Dir(d.tether), filepath.Dir(d.kubectl), d.work, d.metrics)
	if once {
		return nil
	}
	fmt.Println("\nPress Ctrl-C to stop and clean up.")
	<-ctx.Done()
	return nil
}

// setup finds the tools and makes a fresh .demo directory.
func (d *demo) setup() error {
	d.root = ".demo"
	if err := os.RemoveAll(d.root); err != nil {
		return err
	}
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(d.root)
	if err != nil {
		return err
	}
	d.root = abs
	bin, err := controlplane.BinDir()
	if err != nil {
		return err
	}
	d.kubectl = filepath.Join(bin, "kubectl")
	d.tether, err = filepath.Abs(filepath.Join("bin", "tether"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(d.tether); err != nil {
		return fmt.Errorf("%s is missing: run 'make build' first (make demo does)", d.tether)
	}
	return nil
}

// createRepo makes a bare repository and a work clone holding the example app, and
// returns the first commit.
func (d *demo) createRepo() (string, error) {
	bare := filepath.Join(d.root, "git", "deploy.git")
	d.work = filepath.Join(d.root, "work")
	d.repoURL = "file://" + bare
	if err := git("", "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return "", err
	}
	if err := git("", "clone", "--quiet", bare, d.work); err != nil {
		return "", err
	}
	entries, err := app.ReadDir("app")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		data, err := app.ReadFile("app/" + e.Name())
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(d.work, e.Name()), data, 0o644); err != nil {
			return "", err
		}
	}
	return d.commit("Add the web app")
}

func (d *demo) commit(message string) (string, error) {
	for _, args := range [][]string{{"add", "--all"}, {"commit", "--quiet", "-m", message}, {"push", "--quiet", "origin", "HEAD:main"}} {
		if err := git(d.work, args...); err != nil {
			return "", err
		}
	}
	out, err := exec.Command("git", "-C", d.work, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	fmt.Printf("    commit %s: %s\n", sha[:12], message)
	return sha, nil
}

func (d *demo) commitChange() (string, error) {
	for _, edit := range []struct{ file, old, new string }{
		{"deployment.yaml", "replicas: 2", "replicas: 3"},
		{"deployment.yaml", `release: "1"`, `release: "2"`},
		{"configmap.yaml", "hello from git", "hello again, from a second commit"},
	} {
		path := filepath.Join(d.work, edit.file)
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(data), edit.old, edit.new, 1)), 0o644); err != nil {
			return "", err
		}
	}
	return d.commit("Scale web to 3, change the greeting, roll out release 2")
}

func (d *demo) startAgent() error {
	log, err := os.Create(filepath.Join(d.root, "tether.log"))
	if err != nil {
		return err
	}
	for _, addr := range []*string{&d.metrics, &d.probes, &d.webhook} {
		if *addr, err = freeAddr(); err != nil {
			return err
		}
	}
	secrets := filepath.Join(d.root, "webhook")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(secrets, "generic"), []byte("demo-webhook-secret\n"), 0o600); err != nil {
		return err
	}
	d.agent = exec.Command(d.tether, "controller",
		"--webhook-secrets-dir", secrets,
		"--kubeconfig", d.cp.KubeconfigPath(),
		"--metrics-bind-address", d.metrics,
		"--health-probe-bind-address", d.probes,
		"--webhook-bind-address", d.webhook,
		// The demo's repository is a local file:// one, polled every 5s.
		"--allow-file-urls", "--min-interval", "1s",
		"--cache-dir", filepath.Join(d.root, "cache"))
	d.agent.Stdout, d.agent.Stderr = log, log
	d.agent.SysProcAttr = agentProcAttr()
	if err := d.agent.Start(); err != nil {
		return err
	}
	fmt.Printf("    metrics:  http://%s/metrics\n"+
		"    probes:   http://%s/healthz and /readyz\n"+
		"    webhook:  http://%s/hooks/generic (its secret is in %s; see docs/webhooks.md)\n",
		d.metrics, d.probes, d.webhook, filepath.Join(secrets, "generic"))
	return nil
}

// startUI starts `tether ui` on a free loopback port and prints the sign-in URL
// it prints (a one-time link).
func (d *demo) startUI() error {
	log, err := os.Create(filepath.Join(d.root, "ui.log"))
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	d.ui = exec.Command(d.tether, "ui", "--no-browser", "--address", addr, "--kubeconfig", d.cp.KubeconfigPath())
	d.ui.Stderr = log
	d.ui.SysProcAttr = agentProcAttr()
	out, err := d.ui.StdoutPipe()
	if err != nil {
		return err
	}
	if err := d.ui.Start(); err != nil {
		return err
	}
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("tether ui printed no URL (see %s): %w", log.Name(), err)
	}
	fmt.Printf("    ui:       %s\n", strings.TrimSpace(url))
	return nil
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (d *demo) createSync() error {
	manifest := fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata:
  name: web
  namespace: default
spec:
  source:
    url: %s
    ref: {branch: main}
    path: .
    interval: 5s
  destination:
    namespace: demo
`, d.repoURL)
	fmt.Print(indent(manifest))
	cmd := exec.Command(d.kubectl, "--kubeconfig", d.cp.KubeconfigPath(), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// waitApplied prints `kubectl get syncs` as the Sync converges on commit, then the
// app's objects.
func (d *demo) waitApplied(ctx context.Context, commit string) error {
	step("waiting for commit " + commit[:12] + " to be applied")
	deadline := time.Now().Add(3 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		out, err := d.kubeOutput("get", "sync", "web", "-n", "default", "-o",
			`jsonpath={.status.lastAppliedRevision} {.status.conditions[?(@.type=="Ready")].status} {.status.health}`)
		if err != nil {
			return err
		}
		if out != last {
			if table, err := d.kubeOutput("get", "syncs", "-A"); err == nil {
				fmt.Print(indent(table))
			}
			last = out
		}
		if strings.HasSuffix(strings.Fields(out + " x")[0], commit) && strings.Contains(out, " True Healthy") {
			table, err := d.kubeOutput("get", "deployments,services,configmaps,pods", "-n", "demo")
			if err != nil {
				return err
			}
			fmt.Print(indent(table))
			events, err := d.kubeOutput("get", "events", "-n", "default", "--field-selector", "involvedObject.name=web",
				"--sort-by", ".metadata.creationTimestamp", "-o", "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message")
			if err != nil {
				return err
			}
			fmt.Print(indent(events))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("commit %s was not applied and healthy within 3 minutes; see .demo/tether.log", commit)
}

func (d *demo) kube(args ...string) error {
	out, err := d.kubeOutput(args...)
	fmt.Print(indent(out))
	return err
}

func (d *demo) kubeOutput(args ...string) (string, error) {
	cmd := exec.Command(d.kubectl, append([]string{"--kubeconfig", d.cp.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// cleanup stops the agent and the control plane and removes .demo.
func (d *demo) cleanup() {
	step("cleaning up")
	for _, c := range []*exec.Cmd{d.ui, d.agent} {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
	}
	if d.cp != nil {
		if err := d.cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping the control plane:", err)
		}
	}
	if d.root != "" {
		_ = os.RemoveAll(d.root)
	}
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Tether Demo", "GIT_AUTHOR_EMAIL=demo@tether.dev",
		"GIT_COMMITTER_NAME=Tether Demo", "GIT_COMMITTER_EMAIL=demo@tether.dev", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func step(msg string) { fmt.Printf("\n==> %s\n", msg) }

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

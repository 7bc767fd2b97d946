package rig_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// The rig's agent is the one that ships: what an agent built by hand once left
// out (the last-good directory, the Sync state metrics) is there.
func TestTheRigRunsTheAgentAsShipped(t *testing.T) {
	a := rig.Start(t, rig.Options{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "apps")
	commit := repo.Commit(t, map[string]string{"apps/greeting.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting}\ndata: {text: hello}\n"}, "a greeting")
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source:      v1alpha1.SourceSpec{URL: repo.FileURL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "apps", Interval: &metav1.Duration{Duration: time.Hour}},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), s))
	a.WaitApplied(t, s, commit)

	t.Run("the last good revision is kept beside the git cache", func(t *testing.T) {
		file := filepath.Join(agent.LastGoodDir(a.CacheDir), ns+"_app.json")
		harness.Eventually(t, rig.DefaultWaitTimeout, "the Sync's last-good file", func(context.Context) (bool, error) {
			_, err := os.Stat(file)
			return err == nil, err
		})
	})

	t.Run("the Sync state metrics are collected", func(t *testing.T) {
		families, err := a.Registry.Gather()
		harness.Must(t, err)
		for _, f := range families {
			if f.GetName() != "tether_sync_info" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "namespace" && l.GetValue() == ns {
						return
					}
				}
			}
		}
		t.Errorf("no tether_sync_info of namespace %s in the agent's registry", ns)
	})
}

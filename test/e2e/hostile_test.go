package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// Limits on the agent's resident memory (VmHWM), against the shipped 512 MiB
// limit of its container: with every hostile input at once it must survive with
// a fifth of the limit to spare; one render of the worst YAML the bounds let
// through stays within half the limit, and two at once within 320 MiB.
const (
	hostileRSSLimit  = 400 << 20
	oneWorstRSSLimit = 256 << 20
	twoWorstRSSLimit = 320 << 20
)

// worstFlatKeys is how many one-character keys (" %x: v", four YAML nodes by the
// agent's bound from the text) fit in a file just under the default bound of
// 262,144 nodes per file, its ConfigMap header included; three such files fill
// the default bound of 786,432 nodes per render.
const worstFlatKeys = 65_000

// TestTheAgentSurvivesEveryHostileInputAtOnce runs the shipped binary at its default
// limits against every hostile input of the hostile-repository issues at once: a
// kustomization that spells a URL past a naive check, a tree that names a million
// paths in a tiny commit, two flat YAML files of 8 MiB, a scalar under hundreds of
// aliases, a git host whose refusal is a 300 MiB body with a secret in it, a
// flood of unauthenticated webhook bodies, and two renders at once of the worst
// flat YAML the bounds let through. Each hostile Sync fails alone with a
// condition that names why; no request leaves for the network the tenant wanted
// to reach; nothing the host said is quoted; a healthy Sync beside them applies
// each push within two of its intervals; and the agent's peak RSS stays under
// hostileRSSLimit.
func TestTheAgentSurvivesEveryHostileInputAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent against hostile repositories")
	}
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	network := &countingServer{}
	network.start(t)
	host := &refusingGitHost{secret: "internal-token-7f3a"}
	host.start(t)
	a := startAgent(t)

	hostile := map[string]struct {
		url  string
		path string
		says string // in the Ready condition's message
	}{}
	add := func(name, url, path, says string) { hostile[name] = struct{ url, path, says string }{url, path, says} }

	ssrf := git.CreateRepo(t, "ssrf")
	ssrf.Commit(t, map[string]string{"app/kustomization.yaml": "configMapGenerator:\n- name: fine\n  literals: [a=b]\n" +
		"<<: {configMapGenerator: [{name: loot, files: [\"k=" + network.url + "/latest/meta-data\"]}]}\n"}, "a merge key")
	add("ssrf", ssrf.URL(), "app", "kustomization.yaml")

	bomb := git.CreateRepo(t, "bomb")
	bomb.Commit(t, map[string]string{"README.md": "tree bomb below\n"}, "first")
	treeBomb(t, bomb.Dir(), 1000)
	add("bomb", bomb.URL(), ".", "RenderLimitExceeded")

	var flat strings.Builder
	flat.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flat}\ndata:\n")
	for i := 0; flat.Len() < 8<<20; i++ {
		fmt.Fprintf(&flat, "  k%07d: v\n", i)
	}
	for _, name := range []string{"flat-1", "flat-2"} {
		r := git.CreateRepo(t, name)
		r.Commit(t, map[string]string{"app/cm.yaml": flat.String()}, "8 MiB of small keys")
		add(name, r.URL(), "app", "app/cm.yaml")
	}

	var aliases strings.Builder
	aliases.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: amp}\nbig: &big " + strings.Repeat("y", 1<<20) + "\ndata:\n")
	for i := range 400 {
		fmt.Fprintf(&aliases, "  k%d: *big\n", i)
	}
	amplify := git.CreateRepo(t, "amplify")
	amplify.Commit(t, map[string]string{"app/cm.yaml": aliases.String()}, "aliases of a large scalar")
	add("amplify", amplify.URL(), "app", "app/cm.yaml")

	add("refusing-host", host.url()+"/deploy.git", ".", "403")

	for _, name := range []string{"worst-1", "worst-2"} {
		r := git.CreateRepo(t, name)
		r.Commit(t, worstFlatYAML("a"), "the worst flat YAML within the bounds")
		add(name, r.URL(), "app", v1alpha1.ReasonValidationFailed)
	}

	healthy := git.CreateRepo(t, "healthy")
	first := healthy.Commit(t, map[string]string{"app/cm.yaml": fmt.Sprintf(appConfig, "hello")}, "hello")
	const interval = 10 * time.Second
	fine := gitSync(ns, "healthy", healthy.URL(), "app", interval)
	createSync(t, c, fine)
	waitRevision(t, c, fine, first)

	syncs := map[string]*v1alpha1.Sync{}
	for name, h := range hostile {
		syncs[name] = gitSync(ns, name, h.url, h.path, time.Second)
		createSync(t, c, syncs[name])
	}
	flood := startWebhookFlood(t, a, 300, 4<<20)

	t.Run("each hostile Sync fails alone, saying why", func(t *testing.T) {
		for name, h := range hostile {
			harness.Eventually(t, waitTimeout, name+" is not Ready and says why", func(ctx context.Context) (bool, error) {
				got := &v1alpha1.Sync{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(syncs[name]), got); err != nil {
					return false, err
				}
				ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
				if ready == nil || ready.Status != "False" {
					return false, nil
				}
				if !strings.Contains(ready.Reason+" "+ready.Message, h.says) {
					return false, fmt.Errorf("Ready %s %q does not say %q", ready.Reason, ready.Message, h.says)
				}
				return true, nil
			})
		}
	})

	t.Run("the healthy Sync applies each push within two intervals", func(t *testing.T) {
		for i := range 3 {
			commit := healthy.Commit(t, map[string]string{"app/cm.yaml": fmt.Sprintf(appConfig, fmt.Sprintf("push-%d", i))}, "push")
			pushed := time.Now()
			waitRevisionWithin(t, c, fine, commit, 2*interval)
			t.Logf("push %d applied after %s", i, time.Since(pushed).Round(100*time.Millisecond))
		}
	})

	answered, sent := flood.stop()
	t.Run("the webhook flood is answered, never with a push accepted", func(t *testing.T) {
		if answered == 0 || flood.accepted.Load() != 0 {
			t.Errorf("webhook flood: %d requests answered, %d accepted; want some answered, none accepted", answered, flood.accepted.Load())
		}
		t.Logf("webhook flood: %d requests answered, %d MiB of bodies sent", answered, sent>>20)
	})

	t.Run("nothing reached the network, and nothing the host said is quoted", func(t *testing.T) {
		if n := network.requests.Load(); n != 0 {
			t.Errorf("rendering made %d requests to the network; want none", n)
		}
		for name, s := range syncs {
			got := &v1alpha1.Sync{}
			harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(s), got))
			for _, cond := range got.Status.Conditions {
				if strings.Contains(cond.Message, host.secret) {
					t.Errorf("Sync %s's %s condition quotes the host's answer: %q", name, cond.Type, cond.Message)
				}
			}
		}
		if strings.Contains(a.log.String(), host.secret) {
			t.Errorf("the agent's log quotes the host's answer")
		}
	})

	a.running(t)
	peak := peakRSS(t, a.cmd.Process.Pid)
	t.Logf("agent peak RSS (VmHWM) with every hostile input at once: %d MiB (limit %d MiB)", peak>>20, hostileRSSLimit>>20)
	if peak > hostileRSSLimit {
		t.Errorf("the agent's peak RSS was %d MiB; want at most %d MiB", peak>>20, hostileRSSLimit>>20)
	}
}

// TestTheWorstYAMLWithinTheBoundsCostsAtMostHalfTheLimit renders the worst YAML
// the default bounds let through (flat mappings filling a render's node budget)
// with the shipped binary: once, then in two Syncs at once, reading the agent's
// peak RSS after each.
func TestTheWorstYAMLWithinTheBoundsCostsAtMostHalfTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("renders the worst YAML the bounds allow")
	}
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	a := startAgent(t)
	repos := []*gitserver.Repo{git.CreateRepo(t, "worst-1"), git.CreateRepo(t, "worst-2")}
	syncs := make([]*v1alpha1.Sync, len(repos))
	for i, r := range repos {
		r.Commit(t, worstFlatYAML("a"), "the worst flat YAML within the bounds")
		syncs[i] = gitSync(ns, r.Name(), r.URL(), "app", time.Hour)
	}
	// Each render is judged by the validation that follows it: the objects are
	// refused by the API server, so the render happened.
	refusedAt := func(s *v1alpha1.Sync, commit string) {
		harness.Eventually(t, waitTimeout, s.Name+" rendered "+commit+" and was refused", func(ctx context.Context) (bool, error) {
			got := &v1alpha1.Sync{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
				return false, err
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
			return ready != nil && ready.Reason == v1alpha1.ReasonValidationFailed && strings.HasSuffix(got.Status.SourceRevision, commit), nil
		})
	}

	outer := t // the Syncs live as long as the test, not a step of it
	t.Run("one render", func(t *testing.T) {
		createSync(outer, c, syncs[0])
		refusedAt(syncs[0], repos[0].Head(t))
		peak := peakRSS(t, a.cmd.Process.Pid)
		t.Logf("agent peak RSS (VmHWM) after one worst render: %d MiB (limit %d MiB)", peak>>20, oneWorstRSSLimit>>20)
		if peak > oneWorstRSSLimit {
			t.Errorf("peak RSS %d MiB; want at most %d MiB", peak>>20, oneWorstRSSLimit>>20)
		}
	})
	t.Run("two renders at once", func(t *testing.T) {
		// New commits for both, so that neither is answered from the render cache,
		// and both Syncs asked at once.
		commits := make([]string, len(repos))
		for i, r := range repos {
			commits[i] = r.Commit(t, worstFlatYAML("b"), "the worst flat YAML, again")
		}
		createSync(outer, c, syncs[1])
		requestReconcile(t, c, syncs[0])
		for i, s := range syncs {
			refusedAt(s, commits[i])
		}
		peak := peakRSS(t, a.cmd.Process.Pid)
		t.Logf("agent peak RSS (VmHWM) after two worst renders at once: %d MiB (limit %d MiB)", peak>>20, twoWorstRSSLimit>>20)
		if peak > twoWorstRSSLimit {
			t.Errorf("peak RSS %d MiB; want at most %d MiB", peak>>20, twoWorstRSSLimit>>20)
		}
	})
}

// worstFlatYAML is the worst YAML for its size that the default bounds let
// through: three files of flat mappings, each just under the bound of one file,
// which together fill a render's bound. The mapping is a field no ConfigMap has,
// so the API server refuses the objects at once (a ConfigMap of 65,000 keys takes
// it minutes to dry-run). variant makes the files of one call differ from
// another's.
func worstFlatYAML(variant string) map[string]string {
	files := map[string]string{}
	for f := range 3 {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: worst-%d}\n%s:\n", f, variant)
		for i := range worstFlatKeys {
			fmt.Fprintf(&b, " %x: v\n", i)
		}
		files[fmt.Sprintf("app/%d.yaml", f)] = b.String()
	}
	return files
}

// countingServer stands for the network a tenant would like rendering to reach
// (a node's metadata endpoint, another tenant's service): it counts requests.
type countingServer struct {
	url      string
	requests atomic.Int64
}

func (s *countingServer) start(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.requests.Add(1)
		_, _ = w.Write([]byte("instance-secret"))
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
}

// refusingGitHost answers every request with 403 and a body of 300 MiB that starts
// with a secret, written as the client reads it (never held in memory).
type refusingGitHost struct {
	secret string
	srv    *httptest.Server
}

func (h *refusingGitHost) start(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		if _, err := io.WriteString(w, "denied: "+h.secret+"\n"); err != nil {
			return
		}
		for sent := 0; sent < 300<<20; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil || r.Context().Err() != nil {
				return
			}
		}
	}))
	t.Cleanup(h.srv.Close)
}

func (h *refusingGitHost) url() string { return h.srv.URL }

// treeBomb makes the head of branch main of the bare repository at dir a commit
// whose root holds n directories that are all one tree of n files: a few KiB that
// name n×n paths.
func treeBomb(t *testing.T, dir string, n int) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	harness.Must(t, err)
	store := repo.Storer
	blob := store.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	harness.Must(t, err)
	_, err = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	harness.Must(t, err)
	harness.Must(t, w.Close())
	blobHash, err := store.SetEncodedObject(blob)
	harness.Must(t, err)
	tree := func(mode filemode.FileMode, hash plumbing.Hash, prefix string) plumbing.Hash {
		tr := &object.Tree{}
		for i := range n {
			tr.Entries = append(tr.Entries, object.TreeEntry{Name: fmt.Sprintf("%s%05d", prefix, i), Mode: mode, Hash: hash})
		}
		obj := store.NewEncodedObject()
		harness.Must(t, tr.Encode(obj))
		h, err := store.SetEncodedObject(obj)
		harness.Must(t, err)
		return h
	}
	files := tree(filemode.Regular, blobHash, "f")
	root := tree(filemode.Dir, files, "d")
	head, err := repo.Head()
	harness.Must(t, err)
	commit := &object.Commit{
		Author:       object.Signature{Name: "bomb", Email: "bomb@example.com", When: time.Now()},
		Committer:    object.Signature{Name: "bomb", Email: "bomb@example.com", When: time.Now()},
		Message:      "a tree bomb",
		TreeHash:     root,
		ParentHashes: []plumbing.Hash{head.Hash()},
	}
	obj := store.NewEncodedObject()
	harness.Must(t, commit.Encode(obj))
	hash, err := store.SetEncodedObject(obj)
	harness.Must(t, err)
	harness.Must(t, store.SetReference(plumbing.NewHashReference(head.Name(), hash)))
}

// webhookFlood is clients sending unauthenticated near-limit bodies to the agent's
// GitHub receiver, slowly, each a new one a second after its last was answered,
// until stopped: hundreds of bodies on their way at any moment. (Sent back to back,
// thousands a second, they are a flood of CPU on two cores, which no bound on
// memory is about.)
type webhookFlood struct {
	cancel   context.CancelFunc
	wg       gosync.WaitGroup
	answered atomic.Int64
	accepted atomic.Int64
	sent     atomic.Int64
}

func startWebhookFlood(t *testing.T, a *agent, clients, size int) *webhookFlood {
	ctx, cancel := context.WithCancel(t.Context())
	f := &webhookFlood{cancel: cancel}
	httpc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}}
	for range clients {
		f.wg.Go(func() {
			for ctx.Err() == nil {
				body := &slowBody{ctx: ctx, left: size, sent: &f.sent}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.webhookAddr+"/hooks/github", body)
				if err != nil {
					return
				}
				req.ContentLength = int64(size)
				req.Header.Set("X-GitHub-Event", "push")
				req.Header.Set("X-Hub-Signature-256", "sha256=00")
				if resp, err := httpc.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					f.answered.Add(1)
					if resp.StatusCode < 300 {
						f.accepted.Add(1)
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		})
	}
	return f
}

// stop ends the flood and returns how many requests were answered and how many
// bytes of bodies were sent.
func (f *webhookFlood) stop() (answered, sent int64) {
	f.cancel()
	f.wg.Wait()
	return f.answered.Load(), f.sent.Load()
}

// slowBody is a request body of left bytes written 64 KiB at a time, 10 ms apart.
type slowBody struct {
	ctx  context.Context
	left int
	sent *atomic.Int64
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-time.After(10 * time.Millisecond):
	}
	n := min(len(p), b.left, 64<<10)
	for i := range n {
		p[i] = 'x'
	}
	b.left -= n
	b.sent.Add(int64(n))
	return n, nil
}

// requestReconcile asks the agent to look at git for s at once, as `tether
// reconcile` does.
func requestReconcile(t *testing.T, c client.Client, s *v1alpha1.Sync) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ReconcileRequestedAnnotation, time.Now().Format(time.RFC3339Nano))
	harness.Must(t, c.Patch(t.Context(), s.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))))
}

package source_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestGlobListsDirectoriesAndFilesOfACommit(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "glob")
	head := repo.Commit(t, map[string]string{
		"apps/web/deploy.yaml":    "kind: ConfigMap\n",
		"apps/api/deploy.yaml":    "kind: ConfigMap\n",
		"apps/api/nested/x.yaml":  "kind: ConfigMap\n",
		"apps/README.md":          "not a directory\n",
		"clusters/eu/config.yaml": "region: eu\n",
		"clusters/us/config.yaml": "region: us\n",
		"clusters/us/notes.txt":   "skip\n",
		"clusters/config.yaml":    "not at this depth\n",
	}, "a monorepo")
	src := newSource(t, source.Options{AllowFileURLs: true})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	t.Run("a directory glob lists the directories of one level", func(t *testing.T) {
		got, err := src.Glob(rev, "apps/*", source.GlobDirectories)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"apps/api", "apps/web"}, got); diff != "" {
			t.Errorf("directories (-want +got):\n%s", diff)
		}
	})
	t.Run("a file glob lists the files and reads them", func(t *testing.T) {
		got, err := src.Glob(rev, "clusters/*/config.yaml", source.GlobFiles)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"clusters/eu/config.yaml", "clusters/us/config.yaml"}, got); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
		data, err := src.ReadFiles(rev, got)
		if err != nil {
			t.Fatal(err)
		}
		if string(data["clusters/us/config.yaml"]) != "region: us\n" {
			t.Errorf("read %q", data["clusters/us/config.yaml"])
		}
	})
	t.Run("a glob that matches nothing lists nothing", func(t *testing.T) {
		got, err := src.Glob(rev, "nowhere/*", source.GlobDirectories)
		if err != nil || len(got) != 0 {
			t.Errorf("got %v, %v; want nothing", got, err)
		}
	})
	t.Run("a glob leaving the repository is refused", func(t *testing.T) {
		if _, err := src.Glob(rev, "../*", source.GlobDirectories); err == nil {
			t.Error("no error")
		}
	})
	t.Run("a file over the size limit is refused by name", func(t *testing.T) {
		small := newSource(t, source.Options{AllowFileURLs: true, MaxFileSize: 4})
		rev := fetch(t, small, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
		_, err := small.ReadFiles(rev, []string{"clusters/eu/config.yaml"})
		var re *source.RenderError
		if !errors.As(err, &re) || re.File != "clusters/eu/config.yaml" {
			t.Errorf("got %v, want a *source.RenderError naming the file", err)
		}
	})
}

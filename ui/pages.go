package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages are the UI's templates, each page parsed with the layout it fills in.
type pages struct {
	byName map[string]*template.Template
}

// pageNames are the pages of templates/, each a file of that name.
var pageNames = []string{"fleet", "sync", "graph", "object", "diff", "compare", "signin", "message", "logs", "dependencies"}

// pageParts are the templates a page is made of besides its own file.
var pageParts = map[string][]string{"fleet": {"templates/fleet_tiles.html"}}

func parsePages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		files := append([]string{"templates/layout.html", "templates/icons.html", "templates/" + name + ".html"}, pageParts[name]...)
		t, err := template.New(name).ParseFS(templateFiles, files...)
		if err != nil {
			return nil, fmt.Errorf("parsing the page %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// render writes page with data, or a plain error if the template fails (before
// anything is written: it renders into a buffer first).
func (s *Server) render(w http.ResponseWriter, code int, page string, data any) {
	var buf bytes.Buffer
	if err := s.pages.byName[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.opts.Log.Error(err, "rendering a page", "page", page)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// messagePage is a page that says one thing: a refusal, an error.
type messagePage struct {
	Title   string
	Message string
	Back    string // a link back, "" for none
}

// refuse answers with a page that says why the request was refused (or failed).
func (s *Server) refuse(w http.ResponseWriter, _ *http.Request, code int, msg string) {
	s.render(w, code, "message", messagePage{Title: titleOf(code), Message: msg})
}

// titleOf is the title of a page that answers with code: Refused for what the
// user may not do or named wrong, Failed for what went wrong elsewhere.
func titleOf(code int) string {
	if code >= 500 {
		return "Failed"
	}
	return "Refused"
}

// assetHandler serves the embedded stylesheet and script (static/), and no
// directory listing.
func assetHandler() http.Handler {
	files := http.FileServerFS(staticFiles)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

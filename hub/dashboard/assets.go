package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// ui is the front end (plain ES modules and CSS, no build step): index.html, and the files
// served under assets/.
//
//go:embed all:ui
var ui embed.FS

// serveIndex is GET ./: the page.
func serveIndex(w http.ResponseWriter, r *http.Request) {
	b, err := ui.ReadFile("ui/index.html")
	if err != nil {
		writeError(w, http.StatusNotFound, "the dashboard's page is missing from this build")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	_, _ = w.Write(b)
}

// assetHandler serves assets/NAME from ui/NAME (or ui/assets/NAME), revalidated on every
// load so a new binary's files replace the old ones.
func assetHandler() http.Handler {
	sub, err := fs.Sub(ui, "ui")
	if err != nil {
		panic(err) // "ui" is a valid path; fs.Sub fails only on invalid ones
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/assets/")
		if name == "" || name == "." || strings.HasSuffix(r.URL.Path, "/") {
			writeError(w, http.StatusNotFound, "no such asset")
			return
		}
		if _, err := fs.Stat(sub, name); err != nil {
			if _, err := fs.Stat(sub, "assets/"+name); err != nil {
				writeError(w, http.StatusNotFound, "no such asset: "+name)
				return
			}
			name = "assets/" + name
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		r2.URL.RawPath = ""
		files.ServeHTTP(w, r2)
	})
}

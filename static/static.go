// Package static serves seatd's embedded CSS, JavaScript and images under
// content-hashed URLs, so browsers may cache them forever.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed css/app.css js/*.js
var files embed.FS

// Assets maps asset names to hashed URLs and serves them.
type Assets struct {
	hashed map[string]string // "css/app.css" -> "/static/css/app.3f2a1c9e.css"
	byURL  map[string]string // hashed URL path -> file name
}

// New hashes every embedded file once.
func New() (*Assets, error) {
	a := &Assets{hashed: map[string]string{}, byURL: map[string]string{}}
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(name)
		url := "/static/" + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		a.hashed[name] = url
		a.byURL[url] = name
		return nil
	})
	return a, err
}

// Path returns the hashed URL of an asset; it panics on an unknown name
// because that is a programming error caught by any page test.
func (a *Assets) Path(name string) string {
	u, ok := a.hashed[name]
	if !ok {
		panic("static: unknown asset " + name)
	}
	return u
}

// ServeHTTP serves /static/<name>.<hash>.<ext> with a year-long immutable
// cache; any other URL is 404, so a stale hash never serves new content.
func (a *Assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := a.byURL[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeFileFS(w, r, files, name)
}

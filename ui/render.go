package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// page is what every template receives.
type page struct {
	Title string
	Nav   string // the nav entry marked current
	View  view
	CSRF  string
	// Flash reports the outcome of the last action (?msg=); Error what
	// went wrong answering this page.
	Flash, Error string
	Data         any
}

// navItems are the dashboard's pages, in the order of the navigation.
var navItems = []struct{ Path, Name string }{
	{"/live", "Live"}, {"/patterns", "Patterns"}, {"/criteria", "Criteria"},
	{"/knowledge", "Knowledge"}, {"/crossloop", "Cross-loop"}, {"/audit", "Audit"},
}

var funcs = template.FuncMap{
	"num":       num,
	"pct":       pct,
	"link":      link,
	"when":      when,
	"str":       func(v any) string { return fmt.Sprint(v) },
	"pagerOf":   pagerOf,
	"pagerWith": pagerWith,
	"list":      asList,
	"keys":      sortedKeys,
	"nav":       func() any { return navItems },
	"states":    func() []string { return []string{"candidate", "established", "proven", "deprecated"} },
	"statuses": func() []string {
		return []string{"candidate", "established", "promoted", "quarantined", "archived"}
	},
	"truthy": func(v any) bool {
		switch x := v.(type) {
		case nil:
			return false
		case bool:
			return x
		case string:
			return x != ""
		case float64:
			return x != 0
		case []any:
			return len(x) > 0
		}
		return true
	},
	"join": func(v any, sep string) string {
		var out []string
		for _, x := range asList(v) {
			out = append(out, fmt.Sprint(x))
		}
		return strings.Join(out, sep)
	},
	"svg": func(s string) template.HTML { return template.HTML(s) }, // #nosec: built by plot.go, every text escaped
}

// parse reads every page template with the layout.
func (s *Server) parse() error {
	s.pages = map[string]*template.Template{}
	names, err := templateFS.ReadDir("templates")
	if err != nil {
		return fmt.Errorf("dashboard templates: %w", err)
	}
	for _, n := range names {
		if n.Name() == "layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n.Name())
		if err != nil {
			return fmt.Errorf("dashboard template %s: %w", n.Name(), err)
		}
		s.pages[strings.TrimSuffix(n.Name(), ".html")] = t
	}
	return nil
}

// render writes a page; code is the HTTP status (an error on the page
// still renders the page, with the error in it).
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.CSRF = s.csrf
	if p.Flash == "" {
		p.Flash = r.URL.Query().Get("msg")
	}
	var b bytes.Buffer
	if err := s.pages[name].Execute(&b, p); err != nil {
		s.cfg.Logger.Warn("dashboard render", "page", name, "err", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = b.WriteTo(w)
}

// fail renders the error page for a page whose view could not be read
// (a bad audit control).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, title string, v view, err error) {
	s.render(w, r, status(err), "error", page{Title: title, Nav: title, View: v, Error: err.Error()})
}

// num formats a JSON number: integers as such, others with 4 decimals.
func num(v any) string {
	f, ok := v.(float64)
	if !ok {
		if v == nil {
			return "–"
		}
		return fmt.Sprint(v)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.4f", f)
}

// pct formats a ratio in [0, 1] as a percentage.
func pct(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", 100*f)
}

// link builds a dashboard URL for path that keeps the view (project and
// audit point) and adds the pairs kv.
func link(path string, v view, kv ...any) string {
	q, _ := url.ParseQuery(v.Query())
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1]))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// when shows an RFC 3339 time as "2006-01-02 15:04 UTC".
func when(v any) string {
	s, _ := v.(string)
	if s == "" {
		return "–"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.IsZero() || t.Year() <= 1 {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// field reads m[key] of a JSON object.
func field(v any, key string) any {
	m, _ := v.(map[string]any)
	return m[key]
}

// fnum reads m[key] as a number (0 when absent).
func fnum(v any, key string) float64 {
	f, _ := field(v, key).(float64)
	return f
}

// fstr reads m[key] as a string.
func fstr(v any, key string) string {
	s, _ := field(v, key).(string)
	return s
}

// redirect answers an action: back to the page, with its outcome.
func redirect(w http.ResponseWriter, r *http.Request, to string, msg string) {
	u, err := url.Parse(to)
	if err != nil || u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
		u = &url.URL{Path: "/live"}
	}
	q := u.Query()
	q.Set("msg", msg)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/loredev/lore/app"
)

// The knowledge page: swarm (per project) and hive entries, filtered by
// status, category, tier, tag and text; the rejected store with each
// reason; what an injection for a task at a headroom shows. An entry's
// page: its detail and health; quarantine and restore.

type knowledgeData struct {
	Filter    map[string]string
	Entries   []any
	Stats     any
	Rejected  any
	Injection any
	Task      string
	Headroom  string
	Page      pager
}

// knowledgePageSize is how many entries a page of the list shows.
const knowledgePageSize = 100

// Keep is the filters in force as pairs of name and value, for the links
// to the list's other pages.
func (d *knowledgeData) Keep() []any {
	var kv []any
	for _, k := range knowledgeFilters {
		if d.Filter[k] != "" {
			kv = append(kv, k, d.Filter[k])
		}
	}
	return kv
}

// knowledgeFilters are the list's filter fields (knowledge.list arguments
// but the text search, which the page applies to the answer).
var knowledgeFilters = []string{"tier", "status", "category", "tag", "q", "quarantined", "archived", "all_projects"}

func (s *Server) knowledgeData(r *http.Request, v view, d *knowledgeData) error {
	d.Filter = map[string]string{}
	for _, k := range knowledgeFilters {
		d.Filter[k] = strings.TrimSpace(r.FormValue(k))
	}
	args := map[string]any{}
	for _, k := range []string{"tier", "status", "category", "tag"} {
		if d.Filter[k] != "" {
			args[k] = d.Filter[k]
		}
	}
	// A status filter on a hidden status shows it.
	if d.Filter["quarantined"] != "" || d.Filter["status"] == "quarantined" {
		args["quarantined"] = true
	}
	if d.Filter["archived"] != "" || d.Filter["status"] == "archived" {
		args["archived"] = true
	}
	if d.Filter["all_projects"] != "" {
		args["all_projects"] = true
	}
	if d.Filter["q"] != "" {
		args["text"] = d.Filter["q"]
	}
	var err error
	if d.Page, err = newPager(r, knowledgePageSize); err != nil {
		return err
	}
	list, err := s.query(r.Context(), v, "knowledge", "list", d.Page.args(args))
	if err != nil {
		return err
	}
	d.Entries = asList(d.Page.cut(list))
	if d.Stats, err = s.query(r.Context(), v, "knowledge", "stats", nil); err != nil {
		return err
	}
	d.Rejected, err = s.query(r.Context(), v, "knowledge", "rejected", map[string]any{"limit": 100})
	return err
}

func (s *Server) knowledgePage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Knowledge", v, err)
		return
	}
	d := knowledgeData{Headroom: "0.5"}
	p := page{Title: "Knowledge", Nav: "Knowledge", View: v, Data: &d}
	code := http.StatusOK
	if err := s.knowledgeData(r, v, &d); err != nil {
		p.Error, code = err.Error(), status(err)
	}
	s.render(w, r, code, "knowledge", p)
}

// injectAction runs knowledge.inject (a command: lore records what was
// shown, as for any agent) and shows the block on the knowledge page.
func (s *Server) injectAction(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	d := knowledgeData{Task: r.FormValue("task"), Headroom: r.FormValue("headroom")}
	p := page{Title: "Knowledge", Nav: "Knowledge", View: v, Data: &d}
	code := http.StatusOK
	if err == nil {
		args := map[string]any{"task": d.Task}
		if d.Headroom != "" {
			h, perr := strconv.ParseFloat(d.Headroom, 64)
			if perr != nil {
				err = fmt.Errorf("%w: headroom %q: must be a number in [0, 1]", app.ErrBadRequest, d.Headroom)
			}
			args["headroom"] = h
		}
		if err == nil {
			var reply app.CommandReply
			if reply, err = s.command(r.Context(), v, "knowledge", "inject", args); err == nil {
				err = json.Unmarshal(reply.Result, &d.Injection)
			}
		}
	}
	// The page around the preview, whatever became of it.
	if derr := s.knowledgeData(r, v, &d); err == nil {
		err = derr
	}
	if err != nil {
		p.Error, code = err.Error(), status(err)
	}
	s.render(w, r, code, "knowledge", p)
}

type entryData struct {
	ID    string
	Entry any
}

func (s *Server) entryPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Knowledge entry", v, err)
		return
	}
	d := entryData{ID: r.FormValue("id")}
	p := page{Title: "Knowledge entry", Nav: "Knowledge", View: v, Data: &d}
	code := http.StatusOK
	if d.Entry, err = s.query(r.Context(), v, "knowledge", "show", map[string]any{"id": d.ID}); err != nil {
		p.Error, code = err.Error(), status(err)
	}
	s.render(w, r, code, "entry", p)
}

// entryAction quarantines or restores an entry through the pipeline.
func (s *Server) entryAction(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	id := r.FormValue("id")
	back := link("/knowledge/show", v, "id", id)
	if err != nil {
		redirect(w, r, back, err.Error())
		return
	}
	act := r.FormValue("action")
	if act != "quarantine" && act != "restore" {
		redirect(w, r, back, fmt.Sprintf("unknown action %q", act))
		return
	}
	args := map[string]any{"id": id}
	if reason := strings.TrimSpace(r.FormValue("reason")); reason != "" {
		args["reason"] = reason
	}
	if _, err := s.command(r.Context(), v, "knowledge", act, args); err != nil {
		redirect(w, r, back, act+" refused: "+err.Error())
		return
	}
	redirect(w, r, back, act+": done")
}

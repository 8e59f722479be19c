package ui

import "net/http"

// The audit page: the one control (a time or a log sequence, in every
// page's header) explained, and the log's figures at that point.

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Audit", v, err)
		return
	}
	p := page{Title: "Audit", Nav: "Audit", View: v}
	code := http.StatusOK
	if p.Data, err = s.query(r.Context(), v, "audit", "stats", nil); err != nil {
		p.Error, code = err.Error(), status(err)
	}
	s.render(w, r, code, "audit", p)
}

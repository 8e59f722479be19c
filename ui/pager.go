package ui

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/loredev/lore/app"
)

// pager shows a long listing a page at a time (a large registry or
// project does not fit one answer): Offset is the page's first item,
// Prev and Next the neighbouring pages' offsets (-1: none).
type pager struct {
	Offset, Prev, Next int
	size               int
}

// newPager reads the page asked for (?offset=) for pages of size items.
func newPager(r *http.Request, size int) (pager, error) {
	p := pager{Prev: -1, Next: -1, size: size}
	if o := r.FormValue("offset"); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 {
			return p, fmt.Errorf("%w: offset %q: a page's offset is a whole number >= 0", app.ErrBadRequest, o)
		}
		p.Offset = n
	}
	if p.Offset > 0 {
		p.Prev = max(p.Offset-size, 0)
	}
	return p, nil
}

// args are the listing query's paging arguments: one item beyond the
// page says whether a next page exists.
func (p pager) args(more map[string]any) map[string]any {
	a := map[string]any{"offset": p.Offset, "limit": p.size + 1}
	for k, v := range more {
		a[k] = v
	}
	return a
}

// cut keeps the page's items of the listing's answer and sets Next.
func (p *pager) cut(res any) any {
	if l := asList(res); len(l) > p.size {
		p.Next = p.Offset + p.size
		return l[:p.size]
	}
	return res
}

// pagerView is what the "pager" template shows: the links to the
// neighbouring pages of path, keeping the view and the filters keep
// (pairs of name and value).
type pagerView struct {
	P    pager
	N    int // items on this page
	Noun string
	path string
	view view
	keep []any
}

func pagerOf(path string, v view, p pager, n int, noun string, keep ...any) pagerView {
	return pagerWith(path, v, p, n, noun, keep)
}

// pagerWith is pagerOf with the filters to keep as one list of pairs.
func pagerWith(path string, v view, p pager, n int, noun string, keep []any) pagerView {
	return pagerView{P: p, N: n, Noun: noun, path: path, view: v, keep: keep}
}

// Href is the link to the page at offset.
func (p pagerView) Href(offset int) string {
	return link(p.path, p.view, append(append([]any{}, p.keep...), "offset", offset)...)
}

// First and Last number the page's items from 1.
func (p pagerView) First() int { return p.P.Offset + 1 }
func (p pagerView) Last() int  { return p.P.Offset + p.N }

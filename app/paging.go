package app

// Paging of the listings and exports that grow with the store: every
// query taking an offset and a limit checks them with checkPage and cuts
// its answer with page (or pageOf, for an answer of several lists).

// checkPage refuses an offset or a limit below 0, naming it.
func checkPage(offset, limit int) error {
	if offset < 0 {
		return badField("offset", errNegative)
	}
	if limit < 0 {
		return badField("limit", errNegative)
	}
	return nil
}

// page is the items [offset, offset+limit) of xs (limit 0: to the end).
func page[T any](xs []T, offset, limit int) []T {
	skip, left := offset, limit
	if limit == 0 {
		left = -1
	}
	return pageOf(xs, &skip, &left)
}

// pageOf is one list's share of a page over several lists in a row: it
// passes over skip items, then keeps at most left (negative: every one),
// and counts both down.
func pageOf[T any](rs []T, skip, left *int) []T {
	n := min(*skip, len(rs))
	rs, *skip = rs[n:], *skip-n
	if *left >= 0 {
		k := min(*left, len(rs))
		rs, *left = rs[:k], *left-k
	}
	return rs
}

package core

// Page is the one pager of every listing, on every wire: from all, starting
// at off, up to size items that keep allows (nil: all), each converted by
// conv, and no more than fit in budget bytes as cost measures the converted
// items (nil cost: no byte bound), at least one, so that a page of large
// entries is never a message its client refuses. next is the index to
// continue from, or -1 when no item keep allows follows the page.
func Page[T, P any](all []T, off, size, budget int, keep func(T) bool, conv func(T) P, cost func(P) int) (page []P, next int) {
	n, i := 0, off
	for ; i < len(all) && len(page) < size; i++ {
		if keep != nil && !keep(all[i]) {
			continue
		}
		p := conv(all[i])
		if cost != nil {
			// 8: the field's tag and length in the enclosing message.
			if n += cost(p) + 8; n > budget && len(page) > 0 {
				break
			}
		}
		page = append(page, p)
	}
	for j := i; j < len(all); j++ {
		if keep == nil || keep(all[j]) {
			return page, i
		}
	}
	return page, -1
}

// Span is Page for a list that keeps every item and needs no conversion:
// the page is all[off:end], so nothing is allocated (the unfiltered
// ListTools page, served from a per-revision cache). next is end, or -1
// at the end of the list.
func Span[T any](all []T, off, size, budget int, cost func(T) int) (end, next int) {
	n, end := 0, off
	for ; end < len(all) && end-off < size; end++ {
		// 8: the field's tag and length in the enclosing message.
		if n += cost(all[end]) + 8; n > budget && end > off {
			break
		}
	}
	if end < len(all) {
		return end, end
	}
	return end, -1
}

// Same is the identity conversion, for Page over items already in the
// wire's form.
func Same[T any](t T) T { return t }

// PageSize is the page size a request asks for, checked: negative is
// refused (naming field), zero is def, and more than max is max.
func PageSize(field string, n, def, max int) (int, *Error) {
	switch {
	case n < 0:
		return 0, InvalidField(field, "must not be negative, got "+itoa(n))
	case n == 0:
		return def, nil
	case n > max:
		return max, nil
	}
	return n, nil
}

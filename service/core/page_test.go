package core

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPageFitsTheBudget: a page ends early when the next entry would pass
// the byte budget (at least one entry per page), and following the
// offsets returns every kept entry once, in order.
func TestPageFitsTheBudget(t *testing.T) {
	t.Parallel()
	var all []string
	for i := range 50 {
		all = append(all, fmt.Sprintf("%02d-%s", i, strings.Repeat("x", 1000)))
	}
	keep := func(s string) bool { return s[1] != '7' } // drops 07, 17, …
	var got []string
	for off, pages := 0, 0; off >= 0; pages++ {
		items, next := Page(all, off, 100, 4096, keep, Same[string], func(s string) int { return len(s) })
		if len(items) == 0 || len(items) > 4 {
			t.Fatalf("page %d at %d: %d items, want 1-4 of about 1 KB in 4 KB", pages, off, len(items))
		}
		for _, it := range items {
			got = append(got, it[:2])
		}
		off = next
	}
	if len(got) != 45 || got[0] != "00" || got[len(got)-1] != "49" || slices.Contains(got, "07") {
		t.Fatalf("entries %v, want the 45 kept, in order", got)
	}
}

// TestPageSizeAndEnd: without a cost, a page holds size items that keep
// allows; next is -1 exactly when no kept item follows, even when items
// keep refuses do; one item over the budget still makes a page.
func TestPageSizeAndEnd(t *testing.T) {
	t.Parallel()
	all := []int{1, 2, 3, 4, 5, 6}
	even := func(n int) bool { return n%2 == 0 }
	if p, next := Page(all, 0, 2, 0, even, Same[int], nil); !slices.Equal(p, []int{2, 4}) || next != 4 {
		t.Errorf("first page %v next %d, want [2 4] next 4", p, next)
	}
	if p, next := Page(all, 4, 2, 0, even, Same[int], nil); !slices.Equal(p, []int{6}) || next != -1 {
		t.Errorf("last page %v next %d, want [6] next -1", p, next)
	}
	if p, next := Page(all[:5], 0, 2, 0, even, Same[int], nil); !slices.Equal(p, []int{2, 4}) || next != -1 {
		t.Errorf("page before a refused tail: %v next %d, want [2 4] next -1", p, next)
	}
	if p, next := Page(all, 0, 10, 1, nil, Same[int], func(int) int { return 100 }); !slices.Equal(p, []int{1}) || next != 1 {
		t.Errorf("over the budget: %v next %d, want one item, next 1", p, next)
	}
	if _, e := PageSize("page_size", -1, 50, 100); e == nil || e.Violations[0].Field != "page_size" || e.Reason != ReasonRequestInvalid {
		t.Errorf("negative page size: %v, want REQUEST_INVALID on page_size", e)
	}
	if n, _ := PageSize("page_size", 0, 50, 100); n != 50 {
		t.Errorf("zero page size = %d, want the default", n)
	}
	if n, _ := PageSize("page_size", 1000, 50, 100); n != 100 {
		t.Errorf("big page size = %d, want the maximum", n)
	}
}

// TestSpanIsPage: Span (no allocation) bounds the same page as Page with
// every item kept, for every offset, size and budget.
func TestSpanIsPage(t *testing.T) {
	var all []string
	for i := range 40 {
		all = append(all, strings.Repeat("x", 1+(i*37)%300))
	}
	cost := func(s string) int { return len(s) }
	for off := 0; off <= len(all); off++ {
		for _, size := range []int{1, 3, 10, 100} {
			for _, budget := range []int{1, 200, 1000, 1 << 20} {
				page, next := Page(all, off, size, budget, nil, Same[string], cost)
				end, snext := Span(all, off, size, budget, cost)
				if end-off != len(page) || snext != next {
					t.Fatalf("off %d size %d budget %d: Span = [%d:%d] next %d, Page = %d items next %d", off, size, budget, off, end, snext, len(page), next)
				}
			}
		}
	}
}

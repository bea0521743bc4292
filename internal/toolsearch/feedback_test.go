package toolsearch

import (
	"slices"
	"strings"
	"testing"
)

func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"one sentence only", []string{"one sentence only"}},
		{"I'm in Boston. What's the weather? Thanks!", []string{"I'm in Boston.", "What's the weather?", "Thanks!"}},
		{"add 5.0 to 3.0; then fetch https://example.com/a.b now", []string{"add 5.0 to 3.0;", "then fetch https://example.com/a.b now"}},
		{"first line\nsecond line\n\n", []string{"first line", "second line"}},
		{"  ", nil},
	} {
		if got := sentences(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("sentences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNonLatin(t *testing.T) {
	for in, want := range map[string]bool{
		"weather in Boston":                       false,
		"Qual a temperatura atual em Divinópolis": false,
		"我想在肯德基买10个麦辣鸡腿堡":                         true,
		"날씨 get_weather Seoul":                    true,
		"123 _ -":                                 false,
	} {
		if got := nonLatin(in); got != want {
			t.Errorf("nonLatin(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestFeedbackSeesOnlyKept: the documents a first ranking feeds back
// into the query are only those the caller's filter accepts, so a tool a
// principal cannot see never shapes what the principal is returned. The
// hidden tool shares the query's words and two rare words with a third
// tool that shares none of the query's: fed back, those words bring the
// third tool in; filtered out, they must not.
func TestFeedbackSeesOnlyKept(t *testing.T) {
	docs := []Doc[string]{
		doc("pub", "quarterly_sales_report", "", "Quarterly sales report for a region.", "region"),
		doc("sec", "quarterly_sales_ledger", "", "Quarterly sales from the zorblax quintessa ledger.", "region"),
		doc("other", "zorblax_quintessa", "", "Entries of the zorblax quintessa.", "entry"),
		doc("other", "send_email", "", "Send an email to a recipient.", "to\nbody"),
	}
	o := Defaults()
	o.Feedback = Feedback{Docs: 3, Terms: 8, TermWeight: 1}
	ix := New[string](&o)
	for _, d := range docs {
		ix.Upsert(d)
	}
	const q = "quarterly sales"
	all := keys(ix.Search(q, 10, nil))
	if !slices.Contains(all, "other__zorblax_quintessa") {
		t.Fatalf("fed back from every tool, %q returned %v: the test cannot tell a leak", q, all)
	}
	public := func(v string) bool { return !strings.HasPrefix(v, "sec__") }
	got := keys(ix.Search(q, 10, public))
	if slices.Contains(got, "other__zorblax_quintessa") || slices.Contains(got, "sec__quarterly_sales_ledger") {
		t.Errorf("with the ledger hidden, %q returned %v: the hidden tool fed back", q, got)
	}
	if len(got) == 0 || got[0] != "pub__quarterly_sales_report" {
		t.Errorf("with the ledger hidden, %q returned %v, want the report first", q, got)
	}
	// Without feedback the third tool is never a match.
	plain := New[string](nil)
	for _, d := range docs {
		plain.Upsert(d)
	}
	if got := keys(plain.Search(q, 10, nil)); slices.Contains(got, "other__zorblax_quintessa") {
		t.Errorf("without feedback, %q returned %v", q, got)
	}
}

// TestFeedbackDeterministic: with every lever on, the ranking is still a
// function of the documents and the query: another insertion order and
// the pruned or exhaustive evaluation give the same hits, bit for bit.
func TestFeedbackDeterministic(t *testing.T) {
	docs := synthetic(400, 2)
	o := Defaults()
	o.Feedback = Feedback{Docs: 3, Vector: 0.5, Terms: 5, TermWeight: 0.2, DenseTerms: 5, DenseTermWeight: 0.1, Sentences: 2, SentencesLexical: true, Latin: 1}
	ex := o
	ex.Exhaustive = true
	a, b := New[string](&o), New[string](&ex)
	for i := range docs {
		a.Upsert(docs[i])
		b.Upsert(docs[len(docs)-1-i])
	}
	a.prunePerDoc = 0
	queries := []string{
		docs[3].Text[FieldName] + ". " + docs[9].Text[FieldDescription],
		docs[7].Text[FieldDescription],
		"读取 " + docs[11].Text[FieldName],
	}
	for _, q := range queries {
		for _, k := range []int{1, 5, 40} {
			ha, hb := a.Search(q, k, nil), b.Search(q, k, nil)
			if len(ha) == 0 || !slices.Equal(ha, hb) {
				t.Errorf("Search(%q, %d): %v, another order and exhaustive %v", q, k, ha, hb)
			}
			half := func(v string) bool { return hashKey(v)%2 == 0 }
			for _, h := range a.Search(q, k, half) {
				if !half(h.Value) {
					t.Errorf("Search(%q, %d) with a filter returned %s, which it refuses", q, k, h.Key)
				}
			}
		}
	}
}

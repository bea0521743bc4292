package toolsearch

import (
	"slices"
	"sync"
	"testing"
)

var stageQueries = append(slices.Clone(benchQueries),
	"squeeze a file", "compress archive", "find the weather forecast", "upload", "list issues")

// TestStagedBuildRanksAsUpsert: an index built by UpsertBatch answers,
// while its vectors are pending, exactly as the lexical index does (and
// says so); once EmbedPending has run, exactly as one built by Upsert,
// scores bit-equal, and says it used the dense stage.
func TestStagedBuildRanksAsUpsert(t *testing.T) {
	docs := withInstructions(append(synthetic(3000, 7), sample()...), 40, 3)
	lo := Lexical(Defaults())
	serial, lexical, staged := New[string](nil), New[string](&lo), New[string](nil)
	for _, d := range docs {
		serial.Upsert(d)
		lexical.Upsert(d)
	}
	staged.UpsertBatch(len(docs), func(i int) Doc[string] { return docs[i] })
	if !DenseAvailable(Defaults()) {
		t.Fatal("the embedded model does not load")
	}
	if got := staged.Pending(); got != len(docs) {
		t.Fatalf("Pending() = %d after UpsertBatch, want %d", got, len(docs))
	}
	same := func(stage string, got, want []Hit[string]) {
		t.Helper()
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", stage, got, want)
		}
	}
	for _, q := range stageQueries {
		got, lexicalStage := staged.SearchStaged(q, 20, nil)
		if !lexicalStage {
			t.Errorf("SearchStaged(%q) with vectors pending does not say lexical", q)
		}
		same("pending "+q, got, lexical.Search(q, 20, nil))
	}
	staged.EmbedPending()
	if got := staged.Pending(); got != 0 {
		t.Fatalf("Pending() = %d after EmbedPending", got)
	}
	for _, q := range stageQueries {
		got, lexicalStage := staged.SearchStaged(q, 20, nil)
		if lexicalStage {
			t.Errorf("SearchStaged(%q) after EmbedPending says lexical", q)
		}
		same("embedded "+q, got, serial.Search(q, 20, nil))
	}
}

// TestEmbedPendingRacesUpserts: documents replaced and removed while
// EmbedPending runs keep the vector of their current text (a stale one
// is not stored), and searches run throughout.
func TestEmbedPendingRacesUpserts(t *testing.T) {
	docs := synthetic(2000, 11)
	serial, staged := New[string](nil), New[string](nil)
	staged.UpsertBatch(len(docs), func(i int) Doc[string] { return docs[i] })
	changed := slices.Clone(docs)
	for i := range changed {
		if i%3 == 0 {
			changed[i].Text[FieldDescription] = "compress a file into a gzip archive " + changed[i].Text[FieldName]
		}
	}
	var wg sync.WaitGroup
	wg.Go(staged.EmbedPending)
	wg.Go(func() {
		for i, d := range changed {
			switch {
			case i%7 == 0:
				staged.Remove(d.Key)
			case i%3 == 0:
				staged.Upsert(d)
			}
		}
	})
	wg.Go(func() {
		for _, q := range stageQueries {
			staged.Search(q, 10, nil)
		}
	})
	wg.Wait()
	staged.EmbedPending()
	for i, d := range changed {
		if i%7 != 0 {
			serial.Upsert(d)
		}
	}
	for _, q := range stageQueries {
		got, lexicalStage := staged.SearchStaged(q, 20, nil)
		if want := serial.Search(q, 20, nil); lexicalStage || len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%q (lexical stage %v): %v, want %v", q, lexicalStage, got, want)
		}
	}
}

package toolsearch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/toolsearch/staticmodel"
)

func TestAnalyze(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"listPullRequests", []string{"list", "pull", "request"}},
		{"list_pull_requests", []string{"list", "pull", "request"}},
		{"HTTPServer_v2", []string{"http", "server", "v2"}},
		{"get-file.contents", []string{"get", "file", "content"}},
		{"github__create_issue", []string{"github", "creat", "issu"}},
		{"Search the web for a query", []string{"search", "web", "queri"}},
		{"s3 bucket k8s pods", []string{"s3", "bucket", "k8s", "pod"}},
		{"Ran, running, wrote", []string{"run", "run", "write"}},
		{"café naïve Ünïcode", []string{"café", "naïv", "ünïcode"}},
		{"PRs URLs listPRs APIsSearch", []string{"pr", "url", "list", "pr", "api", "search"}},
		{strings.Repeat("x", 41) + " ok", []string{"ok"}},
		{"", nil},
		{"the of a I", nil},
	} {
		if got := terms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("analyze(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func doc(server, name, title, desc, params string) Doc[string] {
	key := server + "__" + name
	return Doc[string]{Key: key, Value: key, Server: server,
		Text: [NumFields]string{FieldName: name, FieldTitle: title, FieldDescription: desc, FieldParams: params, FieldServer: server}}
}

func keys(hits []Hit[string]) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Key
	}
	return out
}

func sample() []Doc[string] {
	return []Doc[string]{
		doc("github", "create_issue", "Create issue", "Create a new issue in a GitHub repository.", "owner\nrepo\ntitle\nbody"),
		doc("github", "delete_repository", "", "Delete a repository. This cannot be undone.", "owner\nrepo"),
		doc("github", "list_pull_requests", "", "List pull requests in a repository.", "owner\nrepo\nstate"),
		doc("github", "get_file_contents", "", "Get the contents of a file or directory from a repository.", "owner\nrepo\npath"),
		doc("fs", "read_file", "", "Read the complete contents of a file from the file system.", "path"),
		doc("fs", "write_file", "", "Create a new file or overwrite an existing file with new content.", "path\ncontent"),
		doc("fs", "list_directory", "", "Get a detailed listing of all files and directories in a specified path.", "path"),
		doc("weather", "get_forecast", "", "Get the weather forecast for a location.", "latitude\nlongitude"),
		doc("slack", "post_message", "", "Post a new message to a Slack channel.", "channel_id\ntext"),
	}
}

func TestSearchRanksByMeaning(t *testing.T) {
	ix := New[string](nil)
	for _, d := range sample() {
		ix.Upsert(d)
	}
	for _, tc := range []struct{ q, want string }{
		{"open a new issue", "github__create_issue"},
		{"remove a repo", "github__delete_repository"},
		{"show open PRs", "github__list_pull_requests"},
		{"what will the temperature be tomorrow", "weather__get_forecast"},
		{"send a chat message to a channel", "slack__post_message"},
		{"folder listing", "fs__list_directory"},
		{"listPullRequests", "github__list_pull_requests"},
	} {
		hits := ix.Search(tc.q, 3, nil)
		if len(hits) == 0 || hits[0].Key != tc.want {
			t.Errorf("Search(%q) = %v, want %s first", tc.q, keys(hits), tc.want)
		}
	}
	if hits := ix.Search("zebra quux", 5, nil); len(hits) != 0 {
		t.Errorf("a query matching nothing returned %v", keys(hits))
	}
	if hits := ix.Search("the of", 5, nil); hits != nil {
		t.Errorf("a query of stop words returned %v", keys(hits))
	}
}

func TestSearchKeepAndLimit(t *testing.T) {
	ix := New[string](nil)
	for _, d := range sample() {
		ix.Upsert(d)
	}
	hits := ix.Search("file repository contents", 10, func(v string) bool { return strings.HasPrefix(v, "fs__") })
	if len(hits) == 0 {
		t.Fatal("no hits")
	}
	for _, h := range hits {
		if !strings.HasPrefix(h.Key, "fs__") {
			t.Errorf("hit %s is not kept", h.Key)
		}
	}
	if got := ix.Search("file", 2, nil); len(got) != 2 {
		t.Errorf("limit 2 returned %d hits", len(got))
	}
	if got := ix.Search("file", 0, nil); got != nil {
		t.Errorf("limit 0 returned %v", keys(got))
	}
	for i := 1; i < len(hits); i++ {
		if better(hits[i], hits[i-1]) {
			t.Errorf("hits out of order: %v", hits)
		}
	}
}

// The ranking depends on the documents indexed, not on the history that
// led there: another insertion order, plus documents added and removed
// and documents replaced, gives bit-equal scores.
func TestDeterministicAcrossHistory(t *testing.T) {
	docs := synthetic(500, 1)
	a := New[string](nil)
	for _, d := range docs {
		a.Upsert(d)
	}
	b := New[string](nil)
	extra := synthetic(200, 2)
	for i := range extra {
		extra[i].Key = "extra__" + extra[i].Key
		b.Upsert(extra[i])
	}
	for i := len(docs) - 1; i >= 0; i-- {
		d := docs[i]
		if i%3 == 0 { // first another version of it
			v := d
			v.Text[FieldDescription] = "an older description of something else entirely"
			b.Upsert(v)
		}
		b.Upsert(d)
	}
	for _, d := range extra {
		b.Remove(d.Key)
	}
	if a.Len() != b.Len() {
		t.Fatalf("Len %d vs %d", a.Len(), b.Len())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		q := strings.Join([]string{vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))]}, " ")
		ha, hb := a.Search(q, 10, nil), b.Search(q, 10, nil)
		if !slices.Equal(ha, hb) {
			t.Fatalf("query %q:\n a %v\n b %v", q, ha, hb)
		}
	}
}

func TestRemoveAll(t *testing.T) {
	ix := New[string](nil)
	docs := synthetic(100, 5)
	for _, d := range docs {
		ix.Upsert(d)
	}
	for _, d := range docs {
		ix.Remove(d.Key)
	}
	ix.Remove("absent")
	if ix.Len() != 0 || len(ix.terms) != 0 || len(ix.byKey) != 0 || len(ix.servers) != 0 {
		t.Fatalf("after removing everything: %d docs, %d terms, %d keys, %d servers", ix.Len(), len(ix.terms), len(ix.byKey), len(ix.servers))
	}
	if hits := ix.Search(vocab[0], 5, nil); hits != nil {
		t.Fatalf("empty index returned %v", hits)
	}
	for f := range NumFields {
		if ix.lenSum[f] != 0 {
			t.Fatalf("field %d length sum %d", f, ix.lenSum[f])
		}
	}
}

// The servers' instructions are indexed incrementally (inverted, by
// server id): servers whose instructions change, that vanish and come
// back, leave the ranking bit-equal to an index built from the final
// documents alone.
func TestInstructionsAcrossHistory(t *testing.T) {
	docs := withInstructions(synthetic(600, 1), 30, 5)
	a := New[string](nil)
	for _, d := range docs {
		a.Upsert(d)
	}
	b := New[string](nil)
	others := withInstructions(synthetic(300, 2), 45, 6) // other instructions, servers a lacks
	for i := range others {
		others[i].Key = "other__" + others[i].Key
		b.Upsert(others[i])
	}
	for i := len(docs) - 1; i >= 0; i-- {
		if i%7 == 0 { // its server's instructions, changed for a while
			v := docs[i]
			v.Instructions = "older instructions about " + vocab[i%len(vocab)]
			b.Upsert(v)
		}
		b.Upsert(docs[i])
	}
	for _, d := range others {
		b.Remove(d.Key)
	}
	if len(a.servers) != len(b.servers) || a.instrLen != b.instrLen || len(a.instrPostings) != len(b.instrPostings) {
		t.Fatalf("servers %d vs %d, instructions' length %d vs %d, terms %d vs %d",
			len(a.servers), len(b.servers), a.instrLen, b.instrLen, len(a.instrPostings), len(b.instrPostings))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	boosted := 0
	for range 100 {
		q := strings.Join([]string{vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))]}, " ")
		ha, hb := a.Search(q, 10, nil), b.Search(q, 10, nil)
		if !slices.Equal(ha, hb) {
			t.Fatalf("query %q:\n a %v\n b %v", q, ha, hb)
		}
		terms, _ := a.parseQuery(q)
		if a.instructionBoost(terms, nil) != nil {
			boosted++
		}
	}
	if boosted == 0 {
		t.Fatal("no query matched any server's instructions: the test exercises nothing")
	}
	for _, d := range docs {
		b.Remove(d.Key)
	}
	if len(b.servers) != 0 || b.instrLen != 0 || len(b.instrPostings) != 0 {
		t.Fatalf("after removing everything: %d servers, instructions' length %d, %d instruction terms", len(b.servers), b.instrLen, len(b.instrPostings))
	}
}

// A server's only tool replaced, again and again, and moved to another
// server and back, leaves the instructions as an index built once.
func TestInstructionsOnlyToolReplaced(t *testing.T) {
	a := doc("alpha", "get_item", "", "Get an item by id.", "id")
	a.Instructions = "Alpha manages warehouse inventory."
	b := doc("beta", "get_thing", "", "Get a thing by id.", "id")
	b.Instructions = "Beta stores blog posts."
	want := New[string](nil)
	want.Upsert(a)
	want.Upsert(b)
	ix := New[string](nil)
	ix.Upsert(b)
	for i := range 5 {
		v := a
		v.Text[FieldDescription] = fmt.Sprintf("version %d", i)
		if i == 3 {
			v.Server, v.Instructions = "gamma", "Gamma is elsewhere."
		}
		ix.Upsert(v)
	}
	ix.Upsert(a)
	if len(ix.servers) != 2 || ix.instrLen != want.instrLen || len(ix.instrPostings) != len(want.instrPostings) {
		t.Fatalf("%d servers, instructions' length %d (want %d), %d terms (want %d)",
			len(ix.servers), ix.instrLen, want.instrLen, len(ix.instrPostings), len(want.instrPostings))
	}
	for _, q := range []string{"get an inventory item", "blog thing", "warehouse"} {
		if got, w := ix.Search(q, 5, nil), want.Search(q, 5, nil); !slices.Equal(got, w) {
			t.Errorf("Search(%q) = %v, want %v", q, got, w)
		}
	}
}

func TestInstructionsBoostTheirServer(t *testing.T) {
	ix := New[string](nil)
	a := doc("alpha", "get_item", "", "Get an item by id.", "id")
	a.Instructions = "Alpha manages warehouse inventory."
	b := doc("beta", "get_item", "", "Get an item by id.", "id")
	b.Instructions = "Beta stores blog posts."
	ix.Upsert(a)
	ix.Upsert(b)
	if hits := ix.Search("get an inventory item", 2, nil); len(hits) != 2 || hits[0].Key != "alpha__get_item" {
		t.Fatalf("hits %v, want alpha first", hits)
	}
}

func TestSchemaText(t *testing.T) {
	s := map[string]any{"type": "object", "properties": map[string]any{
		"zeta":  map[string]any{"type": "string", "description": "Last one"},
		"alpha": map[string]any{"type": "object", "title": "Alpha", "properties": map[string]any{"inner": map[string]any{"description": "Nested"}}},
		"list":  map[string]any{"type": "array", "items": map[string]any{"properties": map[string]any{"elem": map[string]any{}}}},
	}}
	want := "alpha\nAlpha\ninner\nNested\nlist\nelem\nzeta\nLast one\n"
	if got := SchemaText(s); got != want {
		t.Fatalf("SchemaText = %q, want %q", got, want)
	}
	// Bounded for a hostile schema.
	deep := map[string]any{}
	cur := deep
	for range 1000 {
		next := map[string]any{}
		cur["properties"] = map[string]any{"p": next}
		cur = next
	}
	if got := SchemaText(deep); strings.Count(got, "p\n") > maxSchemaDepth+1 {
		t.Fatalf("depth not bounded: %d properties", strings.Count(got, "p\n"))
	}
	wide := map[string]any{}
	props := map[string]any{}
	for i := range 10000 {
		props[fmt.Sprintf("p%05d", i)] = map[string]any{"description": strings.Repeat("word ", 20)}
	}
	wide["properties"] = props
	if got := SchemaText(wide); len(got) > maxSchemaText {
		t.Fatalf("SchemaText of 10,000 properties is %d bytes", len(got))
	}
}

// vocab is a word list for synthetic catalogs.
var vocab = strings.Fields(`account alert analyze append archive artifact asset attach audit backup batch billing blob
board branch browser bucket build cache calendar campaign card cart channel chart check cluster column comment commit
compute config connect contact container content convert copy cost create customer dashboard database dataset delete
deploy describe device diff directory disk dns document domain download draft email endpoint environment event export
feature file filter folder form function gateway get graph group image import incident index instance invoice issue
job key label lead list log map meeting member merge message metric model monitor move network note notification
order organization package page payment permission pipeline plan playlist policy pool post price print product
profile project publish query queue record refund region release remove report repository request resource restart
review role rule run scan schedule schema search secret send server service session share sheet snapshot space
stage start status stop storage stream subscription summary table tag task team template test ticket token topic
trace track transaction transfer trigger update upload user variable version video volume webhook widget workflow
workspace zone`)

// synthetic returns n tool documents over vocab (a Zipf-like word
// distribution, like real descriptions).
func synthetic(n int, seed uint64) []Doc[string] {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	z := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	word := func() string { return vocab[z.Uint64()] }
	out := make([]Doc[string], n)
	for i := range out {
		server := fmt.Sprintf("srv%02d", i%40)
		name := fmt.Sprintf("%s_%s_%d", word(), word(), i)
		var desc, params []string
		for range 12 + rng.IntN(30) {
			desc = append(desc, word())
		}
		for range 2 + rng.IntN(5) {
			params = append(params, word()+"_"+word(), word()+" "+word()+" "+word())
		}
		out[i] = doc(server, name, "", strings.Join(desc, " "), strings.Join(params, "\n"))
	}
	return out
}

// TestHybridReachesParaphrase: a query whose words the tool it means
// does not use ("reduce the size" for gzip's "Compresses") is lifted into
// the results by the dense stage; the lexical ranking (the fallback)
// leaves it out. The keep filter holds for what the dense stage brought
// in. (Until 2026-12-07 the query was "squeeze a file": 3rd with the
// model distilled from all-MiniLM-L6-v2, 4th with all-mpnet-base-v2's;
// "reduce the size of a file" is 3rd with both, 4th lexically. Among
// ten tools, four of which say "file", either model lifts gzip for some
// paraphrases and not others: the eval, docs/search.md, is the measure.)
func TestHybridReachesParaphrase(t *testing.T) {
	lo := Lexical(Defaults())
	hy, lx := New[string](nil), New[string](&lo)
	docs := append(sample(), doc("everything", "gzip-file-as-resource", "",
		"Compresses a single file using gzip compression. Depending upon the selected output type, returns either the compressed data as a gzipped resource or a resource link, allowing it to be downloaded in a subsequent request during the current session.",
		"name\ndata\noutputType"))
	for _, d := range docs {
		hy.Upsert(d)
		lx.Upsert(d)
	}
	const q, want = "reduce the size of a file", "everything__gzip-file-as-resource"
	if got := keys(lx.Search(q, 3, nil)); slices.Contains(got, want) {
		t.Fatalf("lexical Search(%q) = %v: reaches %s without the dense stage", q, got, want)
	}
	if got := keys(hy.Search(q, 3, nil)); !slices.Contains(got, want) {
		t.Errorf("hybrid Search(%q) = %v, want %s", q, got, want)
	}
	for _, h := range hy.Search(q, 10, func(v string) bool { return v != want }) {
		if h.Key == want {
			t.Errorf("hybrid returned %s, which keep refused", want)
		}
	}
	// A strong lexical match still leads.
	if got := hy.Search("create issue", 3, nil); len(got) == 0 || got[0].Key != "github__create_issue" {
		t.Errorf("hybrid Search(create issue) = %v, want github__create_issue first", keys(got))
	}
}

// TestHybridConcurrent: searches (the dense stage's scratch included) run
// while tools change; under -race.
func TestHybridConcurrent(t *testing.T) {
	ix := New[string](nil)
	docs := synthetic(300, 3)
	for _, d := range docs {
		ix.Upsert(d)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			d := docs[i%len(docs)]
			d.Text[FieldDescription] += " changed"
			ix.Upsert(d)
			if i%3 == 0 {
				ix.Remove(docs[(i*7)%len(docs)].Key)
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			if got := ix.Search(benchQueries[0], 5, nil); len(got) == 0 {
				t.Errorf("Search(%q) after the changes: no hits", benchQueries[0])
			}
			return
		default:
		}
		for _, h := range ix.Search(benchQueries[i%len(benchQueries)], 5, nil) {
			if h.Key == "" {
				t.Fatalf("hit with an empty key: %v", h)
			}
		}
	}
}

// TestDocVectorWeighsFields: a tool's vector is the weighted mean of its
// fields (docFields), so a long parameter list about something else pulls
// it away from what the tool is less than an unweighted mean of its text
// would; and the fields share one bound of words read.
func TestDocVectorWeighsFields(t *testing.T) {
	o := Defaults()
	o.WeighFields = true
	ix, plainIx := New[string](&o), New[string](nil)
	m := ix.model()
	if m == nil {
		t.Fatal("the dense stage is off")
	}
	cos := func(a qvec, b [staticmodel.Dims]float32) float64 {
		var s float64
		for i := range a.v {
			s += float64(a.v[i]) * float64(a.scale) * float64(b[i])
		}
		return s
	}
	params := strings.Repeat("customer_id: the account identifier of the customer billed\ninvoice_total: the amount billed, in cents\n", 6)
	d := doc("weather", "get_forecast", "", "Get the weather forecast for a location.", params)
	got, ok := ix.embedDoc(&d)
	if !ok {
		t.Fatal("embedDoc: no vector")
	}
	plain, _ := plainIx.embedDoc(&d)
	text, _ := m.Embed(DocText(&d), maxDocTokens)
	if q := quantize(&text); plain != q {
		t.Error("without WeighFields, a document's vector is not the mean of its text")
	}
	what, _ := m.Embed("get forecast: Get the weather forecast for a location.", 0)
	if w, p := cos(got, what), cos(plain, what); w <= p {
		t.Errorf("cos(tool vector, its name and description) = %.3f, want more than the unweighted mean's %.3f", w, p)
	}

	// Past maxDocTokens words nothing is read: a field after a long one
	// changes nothing.
	long := doc("s", "tool", "", strings.Repeat("alpha beta ", maxDocTokens), "weather")
	short := doc("s", "tool", "", strings.Repeat("alpha beta ", maxDocTokens), "")
	a, _ := ix.embedDoc(&long)
	b, _ := ix.embedDoc(&short)
	if a != b {
		t.Error("a field past the bound of words read changed the vector")
	}
}

// TestNameCover: with Options.NameCover, each hybrid hit's score gains
// NameCover × the share of its name's distinct terms the query matched
// at full weight, and nothing else changes: two tools with the same
// description, one named by the query's words alone, the other with two
// more words in its name.
func TestNameCover(t *testing.T) {
	docs := []Doc[string]{
		doc("w", "weather_forecast", "", "Forecast of the weather for a city.", "city"),
		doc("w", "weather_forecast_hourly_detail", "", "Forecast of the weather for a city.", "city"),
		doc("w", "send_email", "", "Send an email to a recipient.", "to\nbody"),
	}
	off := Defaults()
	on := off
	on.NameCover = 0.5
	scores := func(o *Options) map[string]float64 {
		ix := New[string](o)
		for _, d := range docs {
			ix.Upsert(d)
		}
		out := map[string]float64{}
		for _, h := range ix.Search("weather forecast", 10, nil) {
			out[h.Key] = h.Score
		}
		return out
	}
	before, after := scores(&off), scores(&on)
	want := map[string]float64{"w__weather_forecast": 0.5 * 2 / 2, "w__weather_forecast_hourly_detail": 0.5 * 2 / 4}
	if len(after) != len(before) {
		t.Fatalf("hits with NameCover %v, without %v", after, before)
	}
	for k, b := range before {
		if d := after[k] - b; math.Abs(d-want[k]) > 1e-9 {
			t.Errorf("%s: NameCover added %.6f, want %.6f (scores %v, without %v)", k, d, want[k], after, before)
		}
	}
	if len(want) != 2 || before["w__weather_forecast"] == 0 || before["w__weather_forecast_hourly_detail"] == 0 {
		t.Fatalf("both weather tools should match: %v", before)
	}
}

// TestLongQueryKeepsItsRequest: a query of more than maxQueryWords
// distinct words is ranked lexically on its most informative words in the
// catalog (the highest IDF), not its first: a user's long message whose
// request comes after much that every tool's text shares still finds the
// tool the request names. (The hybrid's vector is still the mean of the
// query's first tokens: here, chatter that thirty tools are made of, so it
// is not asserted; choosing the vector's words the same way was measured
// and not kept, docs/search.md.)
func TestLongQueryKeepsItsRequest(t *testing.T) {
	var chatter []string
	for i := range maxQueryWords + 8 {
		chatter = append(chatter, fmt.Sprintf("chat%d", i))
	}
	var docs []Doc[string]
	for i := range 30 {
		docs = append(docs, doc("misc", fmt.Sprintf("tool%d", i), "", "A tool: "+strings.Join(chatter, " "), ""))
	}
	docs = append(docs, doc("money", "convert_currency", "", "Convert an amount of money between currencies.", "amount\nfrom\nto"))
	opts := Lexical(Defaults())
	ix := New[string](&opts)
	for _, d := range docs {
		ix.Upsert(d)
	}
	for _, query := range []string{
		strings.Join(chatter, " ") + " so please convert this amount between currencies",
		"please convert this amount between currencies " + strings.Join(chatter, " "),
	} {
		hits := ix.Search(query, 5, nil)
		if len(hits) == 0 || hits[0].Key != "money__convert_currency" {
			t.Errorf("%d-word query %.40q…: top 5 %v, want money__convert_currency first", len(strings.Fields(query)), query, keys(hits))
		}
	}
	// A short query is read whole, as before: every word counts.
	if hits := ix.Search("chat0 chat1 convert", 5, nil); len(hits) == 0 || hits[0].Key != "money__convert_currency" {
		t.Errorf("short query: top 5 %v, want money__convert_currency first", keys(hits))
	}
}

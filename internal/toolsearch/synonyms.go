package toolsearch

import "slices"

// Query expansion: a query's term also looks for the words tools use for
// the same thing, at a lower weight (Options.ExpansionWeight), so that
// "remove a repo" finds delete_repository. The groups are the verbs and
// nouns tool names and descriptions use interchangeably; a word may be in
// several groups. They are general English and software vocabulary, not
// tuned to one catalog: a group earns its place when tools name the same
// action or object differently (GitHub's "get_file_contents" and a file
// server's "read_file").
var synonymGroups = [][]string{
	// Verbs.
	{"get", "fetch", "retrieve", "read", "obtain", "load", "show", "view", "display", "describe", "inspect", "lookup"},
	{"list", "enumerate", "browse", "all"},
	{"find", "search", "query", "lookup", "look", "locate", "discover", "filter", "match"},
	{"create", "add", "new", "make", "insert", "generate", "register", "open", "start", "build", "compose", "write"},
	{"delete", "remove", "erase", "destroy", "drop", "purge", "trash", "unlink", "clear", "discard", "uninstall", "deregister"},
	{"update", "edit", "modify", "change", "alter", "patch", "set", "replace", "rename", "adjust", "configure"},
	{"send", "post", "publish", "notify", "message", "email", "mail", "deliver", "submit"},
	{"run", "execute", "exec", "invoke", "launch", "trigger", "call", "perform", "evaluate"},
	{"stop", "kill", "terminate", "cancel", "halt", "abort", "end", "shutdown", "close"},
	{"download", "fetch", "pull", "save", "export"},
	{"upload", "push", "import", "attach"},
	{"copy", "duplicate", "clone"},
	{"move", "rename", "relocate", "transfer"},
	{"merge", "combine", "join"},
	{"summarize", "summary", "digest", "overview", "tldr"},
	{"translate", "convert", "transform"},
	{"analyze", "analysis", "examine", "inspect", "check", "audit", "scan", "review"},
	{"count", "number", "total", "tally"},
	{"schedule", "book", "reserve", "calendar", "event", "meeting", "appointment"},
	{"navigate", "goto", "visit", "browse", "open"},
	{"click", "press", "tap"},
	{"type", "fill", "enter", "input"},
	{"screenshot", "snapshot", "capture"},
	{"scroll", "swipe"},
	{"log", "logs", "trace", "output"},
	{"watch", "monitor", "observe", "track", "follow"},
	{"assign", "allocate", "delegate"},
	{"approve", "accept", "confirm"},
	{"reject", "decline", "deny"},
	{"refund", "reimburse", "reverse"},
	{"pay", "payment", "charge", "bill", "invoice"},
	{"subscribe", "subscription", "follow"},
	{"restart", "reboot", "reload", "redeploy"},
	{"deploy", "deployment", "release", "ship", "rollout"},
	{"scale", "resize", "replicas"},
	{"compare", "diff", "difference"},
	{"test", "verify", "validate", "check"},
	{"sign", "login", "authenticate", "auth"},
	// Nouns.
	{"file", "document", "doc"},
	{"folder", "directory", "dir"},
	{"repo", "repository", "project"},
	{"pr", "pull", "merge"},
	{"issue", "ticket", "bug", "task", "incident"},
	{"comment", "reply", "note", "annotation"},
	{"message", "chat", "conversation", "dm", "thread"},
	{"email", "mail", "inbox"},
	{"channel", "room", "group"},
	{"user", "member", "person", "people", "account", "profile", "contact"},
	{"team", "organization", "org", "workspace", "group"},
	{"image", "picture", "photo", "screenshot", "png", "jpeg"},
	{"video", "movie", "clip"},
	{"web", "website", "page", "site", "url", "internet", "online"},
	{"link", "url", "href"},
	{"database", "db", "sql", "table"},
	{"record", "row", "entry", "item"},
	{"column", "field", "attribute", "property"},
	{"key", "secret", "token", "credential", "password"},
	{"config", "configuration", "settings", "setting", "options", "preferences"},
	{"container", "docker", "pod"},
	{"cluster", "kubernetes", "k8s"},
	{"vm", "instance", "server", "machine", "host"},
	{"bucket", "storage", "blob", "s3"},
	{"function", "lambda", "serverless"},
	{"error", "exception", "failure", "crash", "bug"},
	{"metric", "metrics", "measurement", "stats", "statistics", "usage"},
	{"alert", "alarm", "notification", "warning"},
	{"weather", "forecast", "temperature", "climate"},
	{"location", "place", "address", "map", "geocode", "coordinates"},
	{"direction", "route", "directions", "navigation"},
	{"time", "date", "clock", "timezone"},
	{"price", "cost", "pricing", "quote"},
	{"customer", "client", "buyer"},
	{"product", "item", "sku", "catalog"},
	{"order", "purchase", "checkout"},
	{"note", "memo", "memory"},
	{"knowledge", "memory", "graph", "entity"},
	{"relation", "relationship", "link", "connection"},
	{"branch", "ref"},
	{"commit", "revision", "change", "changeset"},
	{"tag", "label"},
	{"workflow", "pipeline", "action", "job", "build", "ci"},
	{"secret", "vault"},
	{"dns", "domain", "hostname"},
	{"certificate", "cert", "tls", "ssl"},
	{"permission", "role", "access", "acl", "policy"},
	{"doc", "documentation", "docs", "manual", "reference", "guide"},
	{"code", "source", "snippet"},
	{"spreadsheet", "sheet", "excel", "csv"},
	{"presentation", "slide", "slides", "deck"},
	{"song", "music", "track", "audio"},
	{"stock", "share", "ticker", "equity"},
	{"crypto", "cryptocurrency", "bitcoin", "token", "coin"},
	{"news", "article", "headline"},
	{"paper", "article", "publication"},
	{"recipe", "dish", "meal", "food"},
	{"flight", "airline", "plane"},
	{"hotel", "lodging", "accommodation"},
	{"movie", "film"},
	{"exchange", "convert", "rate"},
	{"distance", "length"},
	{"area", "size"},
}

// abbreviations are short forms tools and people use for the same word:
// a query's short form also looks for the long form's words, and a query's
// one-word long form for the short form, at the term's own weight.
var abbreviations = [][2]string{
	{"pr", "pull request"}, {"mr", "merge request"}, {"repo", "repository"}, {"db", "database"},
	{"k8s", "kubernetes"}, {"dir", "directory"}, {"msg", "message"}, {"env", "environment"},
	{"config", "configuration"}, {"doc", "document"}, {"docs", "documentation"}, {"info", "information"},
	{"auth", "authentication"}, {"org", "organization"}, {"id", "identifier"}, {"img", "image"},
	{"pic", "picture"}, {"vm", "virtual machine"}, {"dm", "direct message"},
	{"cal", "calendar"}, {"txn", "transaction"}, {"addr", "address"}, {"admin", "administrator"},
	{"app", "application"}, {"stats", "statistics"}, {"temp", "temperature"},
	{"url", "link"}, {"ci", "continuous integration"}, {"llm", "language model"}, {"ai", "artificial intelligence"},
	{"gh", "github"}, {"k8", "kubernetes"}, {"ns", "namespace"}, {"svc", "service"}, {"deps", "dependencies"},
	{"pkg", "package"}, {"sql", "database query"}, {"q", "query"}, {"desc", "description"}, {"del", "delete"},
	{"rm", "remove"}, {"ls", "list"}, {"mkdir", "create directory"}, {"cwd", "current directory"},
}

// sameTerms maps a term (stemmed) to the terms that stand for the same
// word (abbreviations).
var sameTerms = buildSame(abbreviations)

func buildSame(pairs [][2]string) map[string][]string {
	out := map[string][]string{}
	add := func(from string, to []string) {
		for _, t := range to {
			if t != from && !slices.Contains(out[from], t) {
				out[from] = append(out[from], t)
			}
		}
	}
	for _, p := range pairs {
		short, long := terms(p[0]), terms(p[1])
		if len(short) != 1 || len(long) == 0 {
			continue
		}
		add(short[0], long)
		if len(long) == 1 {
			add(long[0], short)
		}
	}
	return out
}

func terms(text string) []string {
	var out []string
	analyze(text, func(t string) { out = append(out, t) })
	return out
}

// expansions maps a term (stemmed) to the terms of its groups, each once,
// without itself.
var expansions = buildExpansions(synonymGroups)

func buildExpansions(groups [][]string) map[string][]string {
	out := map[string][]string{}
	for _, g := range groups {
		var terms []string
		for _, w := range g {
			analyze(w, func(t string) {
				if !slices.Contains(terms, t) {
					terms = append(terms, t)
				}
			})
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !slices.Contains(out[t], u) {
					out[t] = append(out[t], u)
				}
			}
		}
	}
	for t := range out {
		slices.Sort(out[t])
	}
	return out
}

package mcpfront

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every result valid in its request's protocol era. The two
// schemas differ in what a result carries:
//
//   - 2026-07-28: every result has resultType; the lists and resources/read
//     have ttlMs (an integer >= 0) and cacheScope ("public" or "private"),
//     all three required. Clients built on the Python SDK 2.x (mcp, fastmcp,
//     openai-agents, pydantic-ai) validate them and refuse a result without
//     them; go-sdk's client reads a missing resultType as complete, which
//     is why its tests never saw one missing.
//   - 2025-11-25 and before: none of the three exists.
//
// go-sdk's server sets resultType only on results of its own handlers
// (CallToolResult, GetPromptResult and ReadResourceResult keep it in an
// unexported field) and on the list and completion types (an embedded
// exported field, set after the middleware for a request whose _meta names
// 2026-07-28); it sends ttlMs and cacheScope on every list and read, in any
// era, because go-sdk's Cacheable has no omitempty. And a result decoded
// from a 2026-07-28 upstream keeps that upstream's resultType. So the
// middleware passes every result through eraResult, which makes it what
// the request's era has, and no more:
//
//   - 2026-07-28: resultType "complete" on a read and a prompt (a call's is
//     withEraResultType's, an input_required's its own, a read's without
//     the cache fields, readInput); cacheScope
//     "private" on every list and read, whatever the upstream said (the
//     front door authorizes each request for its principal: a cache shared
//     across principals would skip that check, which "public" allows), and
//     the upstream's ttlMs on a read (0, stale at once, when it sent none
//     or a negative one);
//   - earlier eras: the lists, a read, a prompt and a call without
//     resultType, ttlMs and cacheScope (legacyTools and the other lists,
//     legacyRead, copies without the upstream's resultType).
//
// A passed-through result (passthrough.go) gets the same from passThrough.

// frontCacheScope is the cacheScope of every 2026-07-28 list and read.
const frontCacheScope = "private"

// eraResult is res as the era of req has it.
func eraResult(req mcp.Request, res mcp.Result) mcp.Result {
	if requestEra(req) {
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			r.ResultType, r.TTLMs, r.CacheScope = "complete", 0, frontCacheScope
		case *mcp.ListResourcesResult:
			r.ResultType, r.TTLMs, r.CacheScope = "complete", 0, frontCacheScope
		case *mcp.ListResourceTemplatesResult:
			r.ResultType, r.TTLMs, r.CacheScope = "complete", 0, frontCacheScope
		case *mcp.ListPromptsResult:
			r.ResultType, r.TTLMs, r.CacheScope = "complete", 0, frontCacheScope
		case *mcp.CompleteResult:
			r.ResultType = "complete"
		case *mcp.ReadResourceResult:
			if r.NeedsInput() {
				return &readInput{ResultBase: mcp.ResultBase{Meta: r.Meta}, ResultType: "input_required", InputRequests: r.InputRequests, RequestState: r.RequestState}
			}
			return readComplete(r)
		case *mcp.GetPromptResult:
			if !r.NeedsInput() {
				return promptComplete(r)
			}
		}
		return res
	}
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		return &legacyTools{ListToolsResult: r}
	case *mcp.ListResourcesResult:
		return &legacyResources{ListResourcesResult: r}
	case *mcp.ListResourceTemplatesResult:
		return &legacyTemplates{ListResourceTemplatesResult: r}
	case *mcp.ListPromptsResult:
		return &legacyPrompts{ListPromptsResult: r}
	case *mcp.ReadResourceResult:
		return &legacyRead{ResultBase: mcp.ResultBase{Meta: r.Meta}, Contents: r.Contents}
	case *mcp.GetPromptResult:
		// A copy has no resultType: a 2026-07-28 upstream's is kept in
		// the decoded value (an input_required never reaches an
		// earlier-era client: askRounds asks it).
		return &mcp.GetPromptResult{Meta: r.Meta, Description: r.Description, Messages: r.Messages}
	case *mcp.CallToolResult:
		return &mcp.CallToolResult{Meta: r.Meta, Content: r.Content, StructuredContent: r.StructuredContent, IsError: r.IsError}
	}
	return res
}

// requestEra reports whether req is of protocol 2026-07-28 or later: its
// _meta's version, else its session's.
func requestEra(req mcp.Request) bool {
	if r, ok := req.(*mcp.ServerRequest[*taskParams]); ok {
		// tasks/list comes without params, and go-sdk's ProtocolVersion
		// panics on those (taskRequestVersion).
		return taskRequestVersion(r) >= statelessEra
	}
	type versioned interface{ ProtocolVersion() string }
	v, ok := req.(versioned)
	return ok && v.ProtocolVersion() >= statelessEra
}

// noCacheFields hides go-sdk's Cacheable fields from a list result of an
// era before 2026-07-28: embedded next to the list, its fields are
// shallower than Cacheable's (embedded in the list), so encoding/json
// takes them, and omits them. The list's resultType is empty in these
// eras, and omitted.
type noCacheFields struct {
	TTLMs      *struct{} `json:"ttlMs,omitempty"`
	CacheScope *struct{} `json:"cacheScope,omitempty"`
}

type (
	legacyTools struct {
		*mcp.ListToolsResult
		noCacheFields
	}
	legacyResources struct {
		*mcp.ListResourcesResult
		noCacheFields
	}
	legacyTemplates struct {
		*mcp.ListResourceTemplatesResult
		noCacheFields
	}
	legacyPrompts struct {
		*mcp.ListPromptsResult
		noCacheFields
	}
)

// legacyRead is a read's result of an era before 2026-07-28: its _meta and
// contents (ReadResourceResult's MarshalJSON sends ttlMs, cacheScope and
// the upstream's resultType).
type legacyRead struct {
	mcp.ResultBase
	Contents []*mcp.ResourceContents `json:"contents"`
}

// readInput is a read's input_required of 2026-07-28: no ttlMs and
// cacheScope (ReadResourceResult's MarshalJSON would send them, and an
// input_required has neither).
type readInput struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	RequestState  string              `json:"requestState,omitempty"`
}

// readComplete is a complete read of 2026-07-28: resultType "complete",
// the upstream's ttlMs (0 when it sent none or a negative one) and the
// front door's cacheScope. Its resultType is set by decoding, as in
// withResultType (the field is unexported).
func readComplete(res *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	out := new(mcp.ReadResourceResult)
	if err := json.Unmarshal([]byte(`{"resultType":"complete","contents":[]}`), out); err != nil {
		return res
	}
	out.Meta, out.Contents = res.Meta, res.Contents
	out.TTLMs, out.CacheScope = max(res.TTLMs, 0), frontCacheScope
	return out
}

// promptComplete is a complete prompt of 2026-07-28: resultType "complete".
func promptComplete(res *mcp.GetPromptResult) *mcp.GetPromptResult {
	out := new(mcp.GetPromptResult)
	if err := json.Unmarshal([]byte(`{"resultType":"complete","messages":[]}`), out); err != nil {
		return res
	}
	out.Meta, out.Description, out.Messages = res.Meta, res.Description, res.Messages
	return out
}

package core

// ToolCanAsk reports whether the tool of the shared catalog named name is
// of an upstream whose requests for input may reach its callers ("input":
// "relay", the default); known is false when the shared catalog has no
// such tool (a per-principal tool, or none). The MCP front door answers a
// call that cannot ask as one JSON response (service/mcpfront/jsonanswer.go).
func (s *Core) ToolCanAsk(name string) (asks, known bool) {
	t, ok := s.bridge.Catalog().Current().Lookup(name)
	if !ok {
		return false, false
	}
	return s.bridge.AsksCallers(t.Server), true
}

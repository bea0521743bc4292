"""Progressive discovery through real agent frameworks (TestAgentFrameworksProgressiveDiscovery).

    agents_discovery.py MCP_URL QUERY TOOL ARGS_JSON

toolsvc's front door at MCP_URL lists its core set plus search_tools and
call_tool (--mcp-discovery progressive). Each agent below is driven by a
scripted model, a real model interface of its framework fed a fixed script,
no network: search_tools with QUERY, then call the first tool the search
returned (it must be TOOL) with ARGS_JSON, then answer with what it got.

  openai-agents: an Agent with the front door as an MCP server (a session
    of its own, the tool list not cached: the SDK lists it every turn); the
    model calls the found tool by its own name, which the Agent has only if
    the session's list grew with the search.
  langchain (langchain-mcp-adapters with langgraph's ReAct agent): the
    agent's tools are MultiServerMCPClient.get_tools(), fixed at its start
    (each call opens a new session); the model calls the found tool through
    call_tool. Then, on one explicit session, load_mcp_tools after a search
    has the found tool, and the session saw notifications/tools/list_changed.
  pydantic-ai: an Agent with the front door as an MCPToolset (pydantic-ai's
    MCP client, on fastmcp's Client) and a FunctionModel, pydantic-ai's
    scripted model; the tools it offers the model at the first turn must be
    search_tools and call_tool without TOOL, and the model calls the found
    tool through call_tool.

Each prints "<framework> answer: <the tool's result text>" and exits 1 with
the framework's error if a step fails.
"""
import asyncio
import json
import os
import sys
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no exporter, no network


def found_name(search_output: Any) -> str:
    """The first tool name in search_tools' result, however the framework
    wrapped its JSON text (a string, content blocks, JSON of either)."""
    v = search_output
    for _ in range(8):
        if isinstance(v, dict) and "tools" in v:
            return v["tools"][0]["name"]
        if isinstance(v, dict) and "text" in v:
            v = v["text"]
        elif isinstance(v, list):
            v = "".join(p["text"] if isinstance(p, dict) and "text" in p else str(p) for p in v)
        elif isinstance(v, str):
            v = json.loads(v)
        else:
            break
    raise ValueError(f"no tools in search_tools' output {search_output!r:.300}")


async def openai_agents(url: str, query: str, want: str, args: dict) -> str:
    from agents import Agent, ModelResponse, RunConfig, Runner, Usage
    from agents.mcp import MCPServerStreamableHttp
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        """Turn 1: search; turn 2: call the first tool found, by its name;
        turn 3: answer with its output."""

        def __init__(self) -> None:
            self.turn = 0
            self.offered: list[list[str]] = []  # the tools the Agent offered, per turn

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                               handoffs, tracing, *, previous_response_id=None, conversation_id=None,
                               prompt=None, **_: Any) -> ModelResponse:
            self.turn += 1
            self.offered.append(sorted(t.name for t in tools))
            outputs = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]

            def call(name: str, arguments: dict) -> ResponseFunctionToolCall:
                return ResponseFunctionToolCall(type="function_call", id=f"fc_{self.turn}", call_id=f"call_{self.turn}",
                                                name=name, arguments=json.dumps(arguments), status="completed")

            if self.turn == 1:
                out = [call("search_tools", {"query": query, "limit": 3})]
            elif self.turn == 2:
                out = [call(found_name(outputs[-1]["output"]), args)]
            else:
                output = outputs[-1]["output"]  # the tool's content, as the SDK passed it to the model
                text = output if isinstance(output, str) else "".join(p.get("text", "") for p in output)
                out = [ResponseOutputMessage(type="message", id="msg_3", role="assistant", status="completed",
                                             content=[ResponseOutputText(type="output_text", text=f"answer: {text}",
                                                                         annotations=[])])]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **kw: Any):
            raise NotImplementedError("the test runs the agent without streaming")

    model = ScriptedModel()
    async with MCPServerStreamableHttp(params={"url": url, "timeout": 30}, cache_tools_list=False,
                                       client_session_timeout_seconds=30, name="toolsvc") as server:
        agent = Agent(name="finder", instructions="Find a tool, then use it.", model=model, mcp_servers=[server])
        result = await Runner.run(agent, "use the tool you find", run_config=RunConfig(tracing_disabled=True), max_turns=5)
    if want not in model.offered[1]:
        raise AssertionError(f"turn 2 offered {model.offered[1]}, without {want}")
    return str(result.final_output)


def scripted_chat_model(query: str, args: dict, via_call_tool: bool):
    """A langchain chat model that follows the script: search, call what
    was found (through call_tool, or by its name), answer."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kwargs):  # the script needs no tool schemas
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            results = [m for m in messages if isinstance(m, ToolMessage)]
            if not results:
                msg = AIMessage(content="", tool_calls=[{"name": "search_tools", "args": {"query": query, "limit": 3}, "id": "c1"}])
            elif len(results) == 1:
                name = found_name(results[0].content)
                call = {"name": "call_tool", "args": {"name": name, "arguments": args}} if via_call_tool else {"name": name, "args": args}
                msg = AIMessage(content="", tool_calls=[{**call, "id": "c2"}])
            else:
                content = results[-1].content
                text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content if isinstance(p, dict))
                msg = AIMessage(content=f"answer: {text}")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return ScriptedChatModel()


async def langchain(url: str, query: str, want: str, args: dict) -> str:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langgraph.prebuilt import create_react_agent

    client = MultiServerMCPClient({"toolsvc": {"url": url, "transport": "streamable_http"}})
    tools = await client.get_tools()
    names = [t.name for t in tools]
    if "search_tools" not in names or "call_tool" not in names or want in names:
        raise AssertionError(f"get_tools() = {names}: want search_tools and call_tool, without {want}")
    agent = create_react_agent(scripted_chat_model(query, args, via_call_tool=True), tools)
    out = await agent.ainvoke({"messages": [("user", "use the tool you find")]})
    return out["messages"][-1].content


async def langchain_session(url: str, query: str, want: str, args: dict) -> str:
    """One explicit session: its list grows with what its search found,
    after a list_changed to it; an agent given the grown list calls the
    found tool by name."""
    import mcp.types as mt
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from langgraph.prebuilt import create_react_agent

    changed = asyncio.Event()
    client = MultiServerMCPClient({"toolsvc": {"url": url, "transport": "streamable_http"}})
    async with client.session("toolsvc") as session:
        async def on_message(msg: Any) -> None:
            if isinstance(msg, mt.ServerNotification) and isinstance(msg.root, mt.ToolListChangedNotification):
                changed.set()

        session._message_handler = on_message  # the SDK's hook for server notifications
        before = [t.name for t in await load_mcp_tools(session)]
        if want in before:
            raise AssertionError(f"{want} listed before any search: {before}")
        res = await session.call_tool("search_tools", {"query": query, "limit": 3})
        if res.isError or found_name(res.content[0].text) != want:
            raise AssertionError(f"search_tools: {res}")
        await asyncio.wait_for(changed.wait(), 30)
        tools = await load_mcp_tools(session)
        if want not in [t.name for t in tools]:
            raise AssertionError(f"the session's list after the search: {[t.name for t in tools]}")
        agent = create_react_agent(scripted_chat_model(query, args, via_call_tool=False), tools)
        out = await agent.ainvoke({"messages": [("user", "use the tool you find")]})
    return out["messages"][-1].content


async def pydantic_ai(url: str, query: str, want: str, args: dict) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    offered: list[list[str]] = []  # the tools the Agent offered the model, per turn

    def script(messages: list, info: AgentInfo) -> ModelResponse:
        offered.append(sorted(t.name for t in info.function_tools))
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("search_tools", {"query": query, "limit": 3})])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("call_tool", {"name": found_name(returns[0].content), "arguments": args})])
        content = returns[-1].content  # the tool's result as pydantic-ai gave it to the model
        text = content if isinstance(content, str) else json.dumps(content, separators=(",", ":"))
        return ModelResponse(parts=[TextPart(f"answer: {text}")])

    agent = Agent(FunctionModel(script), toolsets=[MCPToolset(url)])
    async with agent:
        result = await agent.run("use the tool you find")
    first = offered[0]
    if "search_tools" not in first or "call_tool" not in first or want in first:
        raise AssertionError(f"turn 1 offered {first}: want search_tools and call_tool, without {want}")
    return str(result.output)


async def main(url: str, query: str, want: str, args_json: str) -> int:
    args = json.loads(args_json)
    failed = 0
    for name, run in [("openai-agents", openai_agents), ("langchain", langchain), ("langchain-session", langchain_session),
                      ("pydantic-ai", pydantic_ai)]:
        try:
            print(f"{name} {await run(url, query, want, args)}", flush=True)
        except Exception as e:  # report every framework, then fail
            failed = 1
            print(f"{name} failed: {type(e).__name__}: {e}", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:])))

// Tools that ask: callTool's onInput loop against a live toolsvc in front of
// tests/testserver -interactive (go-sdk), over stdio.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, status, ToolsvcError, type InputAnswer, type InputHandler, type InputRequest } from "../src/index.js";
import { testserverBin, Toolsvc } from "./harness.js";

// One toolsvc per test: over stdio a mid-call request goes to a call only
// when it is the upstream's only one in flight, and a test whose handler
// failed leaves its call parked.
async function withAsking(f: (c: Client) => Promise<void>): Promise<void> {
  const svc = await Toolsvc.start({ mcpServers: { ask: { command: testserverBin(), args: ["-mode", "stdio", "-interactive"] } } });
  const c = new Client(svc.addr);
  try {
    await f(c);
  } finally {
    c.close();
    await svc.stop();
  }
}

const answerAll: InputHandler = async (q) => {
  switch (q.kind) {
    case "elicitation":
      return { kind: "elicitation", action: "accept", content: { name: "Ada" } };
    case "sampling":
      return { kind: "sampling", result: { role: "assistant", content: { type: "text", text: "hi there" }, model: "m", stopReason: "endTurn" } };
    case "roots":
      return { kind: "roots", roots: [{ uri: "file:///work", name: "work" }] };
    default:
      throw new Error(`unexpected ${q.kind}`);
  }
};

test("ask_name answered: the typed request, then the result", () =>
  withAsking(async (c) => {
    const seen: InputRequest[] = [];
    const r = await c.callTool("ask__ask_name", {}, {
      timeoutMs: 30_000,
      onInput: (q) => {
        seen.push(q);
        return { kind: "elicitation", action: "accept", content: { name: "Ada" } };
      },
    });
    assert.equal(r.text, "hello Ada");
    assert.equal(seen.length, 1);
    const q = seen[0]!;
    assert.equal(q.kind, "elicitation");
    if (q.kind === "elicitation") {
      assert.equal(q.message, "What is your name?");
      assert.deepEqual(q.requestedSchema, {
        type: "object",
        properties: { name: { type: "string", description: "Your name" } },
        required: ["name"],
      });
      assert.ok(q.id);
    }
  }));

test("declined; without onInput the server's policy declines", () =>
  withAsking(async (c) => {
    const r = await c.callTool("ask__ask_name", {}, { onInput: async () => ({ kind: "elicitation", action: "decline" }) });
    assert.equal(r.text, "declined");
    assert.equal((await c.callTool("ask__ask_name", {})).text, "declined");
  }));

test("ask_all: elicitation, sampling and roots in one round", () =>
  withAsking(async (c) => {
    const kinds: string[] = [];
    const r = await c.callTool("ask__ask_all", {}, {
      onInput: (q) => {
        kinds.push(q.kind);
        if (q.kind === "sampling") {
          assert.equal(q.params["maxTokens"], 20);
        }
        return answerAll(q);
      },
    });
    assert.equal(r.text, "name=Ada model=hi there roots=file:///work");
    assert.deepEqual(kinds.sort(), ["elicitation", "roots", "sampling"]);
  }));

test("ask_url and ask_twice (two rounds)", () =>
  withAsking(async (c) => {
    let url: InputRequest | undefined;
    const r = await c.callTool("ask__ask_url", {}, {
      onInput: (q) => {
        url = q;
        return { kind: "elicitation", action: "accept" };
      },
    });
    assert.equal(r.text, "url accept");
    assert.deepEqual(url, { kind: "elicitationUrl", id: url?.id, message: "Log in, please", url: "https://login.example/authorize?x=1", elicitationId: "el-1" });

    const asked: string[] = [];
    const twice = await c.callTool("ask__ask_twice", {}, {
      onInput: (q): InputAnswer => {
        assert.equal(q.kind, "elicitation");
        const m = q.kind === "elicitation" ? q.message : "";
        asked.push(m);
        return { kind: "elicitation", action: "accept", content: { name: m.replace("?", "").toUpperCase() } };
      },
    });
    assert.equal(twice.text, "FIRST+SECOND");
    assert.deepEqual(asked, ["first?", "second?"]);
  }));

test("a handler that throws ends the call with its error", () =>
  withAsking(async (c) => {
    await assert.rejects(
      c.callTool("ask__ask_name", {}, {
        onInput: async () => {
          throw new Error("no user here");
        },
      }),
      /no user here/,
    );
  }));

test("an answer of the wrong kind is a TypeError", () =>
  withAsking(async (c) => {
    await assert.rejects(c.callTool("ask__ask_name", {}, { onInput: () => ({ kind: "roots", roots: [] }) }), TypeError);
  }));

test("rounds are bounded", () =>
  withAsking(async (c) => {
    const err = await c
      .callTool("ask__ask_twice", {}, { maxInputRounds: 1, onInput: () => ({ kind: "elicitation", action: "accept", content: { name: "x" } }) })
      .catch((e: unknown) => e);
    assert.ok(err instanceof ToolsvcError, String(err));
    assert.equal(err.code, status.ABORTED);
    assert.equal(err.reason, "INPUT_ROUNDS_EXCEEDED");
  }));

test("inputKinds: what is not offered the policy answers", () =>
  withAsking(async (c) => {
    const seen: InputRequest[] = [];
    const r = await c.callTool("ask__ask_name", {}, {
      inputKinds: ["sampling", "roots"],
      onInput: (q) => {
        seen.push(q);
        return answerAll(q);
      },
    });
    assert.equal(r.text, "declined");
    assert.deepEqual(seen, []);
  }));

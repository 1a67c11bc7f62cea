// The official AG-UI client (@ag-ui/client 1.x HttpAgent) against a running durable-agui
// server at AGUI_BASE_URL. Run from tests/test_js_client.py (or: AGUI_BASE_URL=... npm test).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";

const BASE = process.env.AGUI_BASE_URL;
assert.ok(BASE, "set AGUI_BASE_URL to a running durable-agui server");

const CONFIRM_BOOKING = {
  name: "confirm_booking",
  description: "Ask the person to confirm a booking.",
  parameters: { type: "object", properties: { flight: { type: "string" } } },
};
const CHOOSE_SEAT = {
  name: "choose_seat",
  description: "Let the person pick a seat.",
  parameters: { type: "object", properties: { row: { type: "number" } } },
};

// What the app does when the agent calls one of its tools: the tool really runs here.
const FRONTEND = {
  confirm_booking: (args) => ({ approved: true, flight: args.flight }),
  choose_seat: (args) => ({ seat: `${args.row}C` }),
};

// HttpAgent 1.0 leaves connect() and getCapabilities() to subclasses: this is all it takes.
class DurableAgent extends HttpAgent {
  connect(input) {
    return transformHttpEventStream(
      runHttpRequest(() => this.fetch(`${this.url}/connect`, this.requestInit(input))),
      this.debugLogger,
    );
  }

  async getCapabilities() {
    return (await fetch(`${this.url}/capabilities`)).json();
  }
}

function newAgent(name) {
  return new DurableAgent({ url: `${BASE}/agents/demo`, threadId: `js-${name}-${randomUUID().slice(0, 6)}` });
}

function say(agent, text) {
  agent.addMessage({ id: randomUUID(), role: "user", content: text });
}

// The frontend calls a run leaves waiting, as a client at the server's defaults finds them
// (AG-UI 1.0: a RUN_FINISHED without pendingToolCallIds leaves it to the client, from the
// stream): the run's TOOL_CALL_STARTs of the app's tools with no TOOL_CALL_RESULT.
function waitingCalls(events) {
  const answered = new Set(events.filter((e) => e.type === "TOOL_CALL_RESULT").map((e) => e.toolCallId));
  return events
    .filter((e) => e.type === "TOOL_CALL_START" && e.toolCallName in FRONTEND && !answered.has(e.toolCallId))
    .map((e) => e.toolCallId);
}

async function run(agent, parameters = {}) {
  const events = [];
  await agent.runAgent(parameters, { onEvent: ({ event }) => events.push(event) });
  const finished = events.at(-1);
  assert.equal(finished.type, "RUN_FINISHED");
  return { events, outcome: finished.outcome ?? { type: "success" }, pending: waitingCalls(events) };
}

function lastAssistantText(agent) {
  return agent.messages.filter((m) => m.role === "assistant" && m.content).at(-1)?.content;
}

function toolCallIds(messages) {
  return messages.flatMap((m) => (m.toolCalls ?? []).map((c) => c.id).concat(m.toolCallId ? [m.toolCallId] : []));
}

async function serverMessages(agent) {
  const response = await fetch(`${BASE}/threads/${agent.threadId}/messages`);
  assert.equal(response.status, 200);
  return (await response.json()).messages;
}

// Run the app's frontend tools for the pending calls, then run the agent again with results.
async function answerPendingCalls(agent, pending, answer = (call) => JSON.stringify(FRONTEND[call.function.name](JSON.parse(call.function.arguments)))) {
  const calls = agent.messages.flatMap((m) => m.toolCalls ?? []).filter((c) => pending.includes(c.id));
  assert.equal(calls.length, pending.length);
  for (const call of calls) {
    const message = { id: randomUUID(), role: "tool", toolCallId: call.id, content: "" };
    Object.assign(message, typeof answer(call) === "string" ? { content: answer(call) } : answer(call));
    agent.addMessage(message);
  }
  return run(agent, { tools: [CONFIRM_BOOKING, CHOOSE_SEAT] });
}

test("a plain text reply", async () => {
  const agent = newAgent("echo");
  say(agent, "hello from node");
  await run(agent);
  assert.equal(lastAssistantText(agent), "echo: hello from node");
  assert.deepEqual(
    (await serverMessages(agent)).map((m) => m.role),
    agent.messages.map((m) => m.role),
  );
});

test("the frontend-tool round trip, the tool executed by the app", async () => {
  const agent = newAgent("trip");
  say(agent, 'call confirm_booking {"flight":"JS1"}');
  const first = await run(agent, { tools: [CONFIRM_BOOKING] });
  assert.deepEqual(first.outcome, { type: "success" }); // the server's default names no calls
  const pending = first.pending;
  assert.equal(pending.length, 1);
  await answerPendingCalls(agent, pending);
  assert.equal(lastAssistantText(agent), 'confirm_booking -> success: {"approved":true,"flight":"JS1"}');
  assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assert.deepEqual(toolCallIds(agent.messages), toolCallIds(await serverMessages(agent)));
});

test("two parallel frontend calls", async () => {
  const agent = newAgent("parallel");
  say(agent, 'call confirm_booking {"flight":"P1"}\ncall choose_seat {"row":7}');
  const first = await run(agent, { tools: [CONFIRM_BOOKING, CHOOSE_SEAT] });
  assert.equal(first.pending.length, 2);
  await answerPendingCalls(agent, first.pending);
  assert.equal(
    lastAssistantText(agent),
    'confirm_booking -> success: {"approved":true,"flight":"P1"}\nchoose_seat -> success: {"seat":"7C"}',
  );
  assert.deepEqual(toolCallIds(agent.messages), toolCallIds(await serverMessages(agent)));
});

test("a denial reaches the model as sent", async () => {
  const agent = newAgent("deny");
  say(agent, 'call confirm_booking {"flight":"D1"}');
  const first = await run(agent, { tools: [CONFIRM_BOOKING] });
  await answerPendingCalls(agent, first.pending, () => '{"approved": false}');
  assert.equal(lastAssistantText(agent), 'confirm_booking -> success: {"approved": false}');
});

test("an error result keeps its text", async () => {
  const agent = newAgent("error");
  say(agent, 'call confirm_booking {"flight":"E1"}');
  const first = await run(agent, { tools: [CONFIRM_BOOKING] });
  await answerPendingCalls(agent, first.pending, () => ({ content: "", error: "card declined" }));
  assert.equal(lastAssistantText(agent), "confirm_booking -> error: card declined");
  const tool = (await serverMessages(agent)).find((m) => m.role === "tool");
  assert.equal(tool.error, "card declined");
});

test("an approval interrupt resolved with resume", async () => {
  const agent = newAgent("approve");
  say(agent, 'call cancel_booking {"booking":"BK-J"}');
  const first = await run(agent);
  assert.equal(first.outcome.type, "interrupt");
  const [interrupt] = first.outcome.interrupts;
  assert.equal(interrupt.reason, "tool_approval");
  const second = await run(agent, {
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { note: "from node" } }],
  });
  const result = second.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.deepEqual(JSON.parse(result.content), { cancelled: "BK-J", note: "from node" });
  assert.match(lastAssistantText(agent), /^cancel_booking -> success: /);
  assert.deepEqual(toolCallIds(agent.messages), toolCallIds(await serverMessages(agent)));
});

test("an approval interrupt cancelled with resume", async () => {
  const agent = newAgent("cancel");
  say(agent, 'call cancel_booking {"booking":"BK-K"}');
  const first = await run(agent);
  const [interrupt] = first.outcome.interrupts;
  await run(agent, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
  assert.equal(lastAssistantText(agent), "cancel_booking -> error: The person declined this action; it was not run.");
});

test("a batch mixing a backend and a frontend call continues with the client's transcript", async () => {
  // The client keeps the backend call's TOOL_CALL_RESULT as a tool message and sends it
  // back with the answer: the server acknowledges it and keeps the result it stored.
  const agent = newAgent("mixed");
  say(agent, 'call lookup_flight {"flight":"XY9"}\ncall confirm_booking {"flight":"XY9"}');
  const first = await run(agent, { tools: [CONFIRM_BOOKING] });
  const pending = first.pending;
  assert.equal(pending.length, 1);
  assert.equal(agent.messages.filter((m) => m.role === "tool").length, 1); // the backend result
  await answerPendingCalls(agent, pending);
  const text = lastAssistantText(agent);
  assert.match(text, /^lookup_flight -> success: \{"flight": "XY9"/);
  assert.match(text, /confirm_booking -> success: \{"approved":true,"flight":"XY9"\}$/);
});

test("a reloaded page connects, gets its history and pending card back, and answers", async () => {
  const agent = newAgent("reload");
  say(agent, 'call confirm_booking {"flight":"R1"}');
  const first = await run(agent, { tools: [CONFIRM_BOOKING] });
  const pending = first.pending;
  assert.equal(pending.length, 1);

  // The page reloads: a new agent object on the same thread, with no messages; connect
  // streams the open call again.
  const reloaded = new DurableAgent({ url: `${BASE}/agents/demo`, threadId: agent.threadId });
  const connected = [];
  await reloaded.connectAgent({}, { onEvent: ({ event }) => connected.push(event) });
  assert.deepEqual(waitingCalls(connected), pending);
  assert.deepEqual(reloaded.messages.map((m) => m.role), ["user", "assistant"]);
  assert.deepEqual(toolCallIds(reloaded.messages), pending);
  assert.deepEqual(JSON.parse(reloaded.messages[1].toolCalls[0].function.arguments), { flight: "R1" });

  await answerPendingCalls(reloaded, pending);
  assert.equal(lastAssistantText(reloaded), 'confirm_booking -> success: {"approved":true,"flight":"R1"}');
  assert.equal((await reloaded.getCapabilities()).humanInTheLoop.supported, true);
});

test("shared state: the client's state merges with the stored one and follows each delta", async () => {
  const agent = newAgent("state");
  agent.setState({ traveller: "Ada" });
  say(agent, 'call save_flight {"flight":"S1"}');
  const first = await run(agent);
  assert.deepEqual(first.events.find((e) => e.type === "STATE_SNAPSHOT").snapshot, { traveller: "Ada" });
  assert.ok(first.events.some((e) => e.type === "STATE_DELTA"));
  assert.deepEqual(agent.state, { traveller: "Ada", savedFlights: ["S1"] });
  const thread = await (await fetch(`${BASE}/threads/${agent.threadId}`)).json();
  assert.deepEqual(thread.state, agent.state);

  // The client changes its key; the tool's key is kept and grows.
  agent.setState({ ...agent.state, traveller: "Bo" });
  say(agent, 'call save_flight {"flight":"S2"}');
  await run(agent);
  assert.deepEqual(agent.state, { traveller: "Bo", savedFlights: ["S1", "S2"] });
});

test("context reaches the tools for that run only and is not stored", async () => {
  const agent = newAgent("context");
  say(agent, 'call save_flight {"flight":"C1"}');
  const first = await run(agent, { context: [{ description: "home airport", value: "LHR" }] });
  const result = JSON.parse(first.events.find((e) => e.type === "TOOL_CALL_RESULT").content);
  assert.equal(result.contextEntries, 1);
  say(agent, 'call save_flight {"flight":"C2"}');
  const second = await run(agent);
  assert.equal(JSON.parse(second.events.find((e) => e.type === "TOOL_CALL_RESULT").content).contextEntries, 0);
  assert.ok(!JSON.stringify(await serverMessages(agent)).includes("LHR"));
});

test("a second device with an empty transcript gets the history in a messages snapshot", async () => {
  const agent = newAgent("snapshot");
  say(agent, "hello from the first device");
  await run(agent);

  const other = new DurableAgent({ url: `${BASE}/agents/demo`, threadId: agent.threadId });
  say(other, "hello from the second");
  const { events } = await run(other);
  assert.equal(events[1].type, "MESSAGES_SNAPSHOT");
  assert.deepEqual(other.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assert.equal(lastAssistantText(other), "echo: hello from the second");
  assert.deepEqual(other.messages.map((m) => m.id).slice(0, 2), (await serverMessages(agent)).map((m) => m.id).slice(0, 2));

  // The first device's transcript is stale now: its next run starts with the snapshot too.
  say(agent, "and again from the first");
  const stale = await run(agent);
  assert.equal(stale.events[1].type, "MESSAGES_SNAPSHOT");
  assert.equal(agent.messages.filter((m) => m.role === "user").length, 3);
});

test("reasoning streams as reasoning messages, kept by the thread", async () => {
  const agent = newAgent("reasoning");
  say(agent, "think about flights\nhello");
  const { events } = await run(agent);
  const kinds = events.map((e) => e.type);
  assert.ok(kinds.indexOf("REASONING_START") < kinds.indexOf("REASONING_END"));
  assert.ok(kinds.indexOf("REASONING_END") < kinds.indexOf("TEXT_MESSAGE_START"));
  const reasoning = agent.messages.filter((m) => m.role === "reasoning");
  assert.deepEqual(reasoning.map((m) => m.content), ["about flights"]);
  assert.deepEqual(
    (await serverMessages(agent)).filter((m) => m.role === "reasoning").map((m) => m.content),
    ["about flights"],
  );

  // The transcript with its reasoning message is the thread's history: no snapshot.
  say(agent, "hello again");
  const next = await run(agent);
  assert.ok(!next.events.some((e) => e.type === "MESSAGES_SNAPSHOT"));
  assert.equal(lastAssistantText(agent), "echo: hello again");
});

test("connect gives a reloaded page the stored state, and predicted state before a pending call", async () => {
  const WRITE_DOCUMENT = {
    name: "write_document",
    description: "Show the person a draft.",
    parameters: { type: "object", properties: { document: { type: "string" } } },
  };
  const documentText = "Dear Ada, your flight XY1 leaves at 09:40 from gate B7; boarding closes at 09:10.";
  const agent = newAgent("predict");
  agent.setState({ traveller: "Ada" });
  say(agent, `call write_document ${JSON.stringify({ document: documentText })}`);
  const first = await run(agent, { tools: [WRITE_DOCUMENT] });
  const kinds = first.events.map((e) => e.type);
  const prediction = first.events[kinds.indexOf("TOOL_CALL_START") - 1];
  assert.equal(prediction.name, "PredictState");
  assert.deepEqual(prediction.value, [{ state_key: "document", tool: "write_document", tool_argument: "document" }]);
  assert.ok(kinds.filter((k) => k === "TOOL_CALL_ARGS").length > 1);

  const reloaded = new DurableAgent({ url: `${BASE}/agents/demo`, threadId: agent.threadId });
  const custom = [];
  await reloaded.connectAgent({}, { onCustomEvent: ({ event }) => { custom.push(event.name); } });
  assert.deepEqual(custom, ["PredictState"]);
  assert.deepEqual(reloaded.state, { traveller: "Ada" });
  const call = reloaded.messages.flatMap((m) => m.toolCalls ?? [])[0];
  assert.equal(JSON.parse(call.function.arguments).document, documentText);

  reloaded.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: "accepted" });
  await run(reloaded, { tools: [WRITE_DOCUMENT] });
  assert.equal(lastAssistantText(reloaded), "write_document -> success: accepted");
});

test("media parts round-trip as parts with data sources", async () => {
  const agent = newAgent("media");
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
  agent.addMessage({
    id: randomUUID(),
    role: "user",
    content: [
      { type: "text", text: "what is in it" },
      { type: "image", source: { type: "data", mimeType: "image/png", value: png } },
    ],
  });
  await run(agent);
  assert.equal(lastAssistantText(agent), "echo: what is in it");
  const [stored] = await serverMessages(agent);
  assert.deepEqual(stored.content, agent.messages[0].content);
});

test("a backend tool's activity and custom events reach the client in order", async () => {
  const agent = newAgent("activity");
  const custom = [];
  say(agent, 'call check_in {"flight":"A1","passengers":2}');
  const events = [];
  await agent.runAgent({}, {
    onEvent: ({ event }) => events.push(event),
    onCustomEvent: ({ event }) => custom.push(event),
  });
  const kinds = events.map((e) => e.type);
  assert.deepEqual(
    kinds.filter((k) => k.startsWith("ACTIVITY_") || k === "CUSTOM" || k === "TOOL_CALL_RESULT"),
    ["ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "ACTIVITY_DELTA", "CUSTOM", "TOOL_CALL_RESULT"],
  );
  assert.deepEqual(custom.map((e) => e.value), [{ flight: "A1", of: 2 }]);
  const card = agent.messages.find((m) => m.role === "activity");
  assert.deepEqual(card.content, { flight: "A1", done: 2, of: 2 });
});

test("regenerate and edit, as a page sends them, replace what followed", async () => {
  const agent = newAgent("regen");
  say(agent, "hello");
  await run(agent);
  say(agent, "second");
  await run(agent);
  const answered = agent.messages.at(-1).id;

  // Regenerate: the last answer dropped, the same request again.
  agent.setMessages(agent.messages.slice(0, -1));
  await run(agent);
  assert.notEqual(agent.messages.at(-1).id, answered);
  assert.equal(lastAssistantText(agent), "echo: second");
  assert.deepEqual((await serverMessages(agent)).map((m) => m.content), ["hello", "echo: hello", "second", "echo: second"]);

  // Edit: the first message changed in place; what followed it goes.
  agent.setMessages([{ ...agent.messages[0], content: "hello, edited" }]);
  await run(agent);
  assert.equal(lastAssistantText(agent), "echo: hello, edited");
  assert.deepEqual((await serverMessages(agent)).map((m) => m.content), ["hello, edited", "echo: hello, edited"]);
});

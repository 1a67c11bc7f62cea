// The two pieces that put CopilotKit's runtime on a durable-agui server.
//
// DurableAgent: @ag-ui/client 1.0's HttpAgent leaves connect() to subclasses; the server
// answers it at POST <agent url>/connect (README "Connect and capabilities").
//
// DurableAgentRunner: the runtime's default runner (InMemoryAgentRunner) answers a page's
// /connect from the events it saw in this process, so after a restart of this process, or
// for a run it never saw (a REST answer, another tab), a reloaded page would get nothing.
// The server is the one that knows the thread: this runner passes runs through and asks
// the server for connects and cancels.
import { randomUUID } from "node:crypto";

import { EventType, HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { AgentRunner } from "@copilotkit/runtime/v2";
import { Observable } from "rxjs";

export class DurableAgent extends HttpAgent {
  connect(input) {
    return transformHttpEventStream(
      runHttpRequest(() => this.fetch(`${this.url}/connect`, this.requestInit(input))),
      this.debugLogger,
    );
  }
}

// An HTTP refusal before the stream ({"detail": {"type", "message"}}) or a server that does
// not answer, as the one RUN_ERROR the page shows; the runtime would only close the stream.
function runError(error) {
  const detail = error?.payload?.detail;
  if (detail && typeof detail.type === "string") {
    return { type: EventType.RUN_ERROR, code: detail.type, message: String(detail.message) };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { type: EventType.RUN_ERROR, code: "ServerUnavailable", message };
}

// Events of `events$` (an Observable), ending in RUN_ERROR instead of an error.
function withRunError(events$) {
  return new Observable((subscriber) => {
    let terminal = false;
    const subscription = events$.subscribe({
      next: (event) => {
        terminal ||= event.type === EventType.RUN_FINISHED || event.type === EventType.RUN_ERROR;
        subscriber.next(event);
      },
      error: (error) => {
        if (!terminal) subscriber.next(runError(error));
        subscriber.complete();
      },
      complete: () => subscriber.complete(),
    });
    return () => subscription.unsubscribe();
  });
}

export class DurableAgentRunner extends AgentRunner {
  /**
   * @param {{serverUrl: string, agents: Record<string, DurableAgent>}} options
   *   serverUrl: the durable-agui API (http://127.0.0.1:8000); agents: the runtime's agents.
   */
  constructor({ serverUrl, agents }) {
    super();
    this.serverUrl = serverUrl.replace(/\/$/, "");
    this.agents = agents;
    this.runs = new Map(); // threadId -> {sent, actual}: the run this process streams, its runIds
  }

  run({ threadId, agent, input: sent }) {
    // CopilotKit 1.74's useInterrupt resumes under the interrupted run's runId (CopilotKit
    // issue #6999, fix open in #7001); AG-UI's interrupts doc has the resume as a new run, and
    // the server refuses a runId used before with other input (409: that is its retry guard).
    const input = sent.resume?.length ? { ...sent, runId: `resume-${randomUUID()}` } : sent;
    return new Observable((subscriber) => {
      const run = { sent: sent.runId, actual: input.runId };
      this.runs.set(threadId, run);
      const subscription = withRunError(agent.run(input)).subscribe(subscriber);
      return () => {
        subscription.unsubscribe();
        if (this.runs.get(threadId) === run) this.runs.delete(threadId);
      };
    });
  }

  connect({ threadId, agentId, headers }) {
    const agent = this.agents[agentId ?? "default"];
    if (!agent) {
      return new Observable((subscriber) => {
        subscriber.next(runError(new Error(`no agent ${agentId}`)));
        subscriber.complete();
      });
    }
    const connecting = agent.clone();
    connecting.threadId = threadId;
    connecting.headers = { ...connecting.headers, ...headers };
    // Only threadId and runId are read by the server; nothing is stored.
    const input = {
      threadId,
      runId: `connect-${randomUUID()}`,
      messages: [],
      state: {},
      tools: [],
      context: [],
      forwardedProps: {},
    };
    return withRunError(connecting.connect(input));
  }

  async isRunning({ threadId }) {
    return this.runs.has(threadId);
  }

  // The page's stop button: the server stops the run at its next safe point.
  async stop({ threadId, runId }) {
    const run = this.runs.get(threadId);
    const serverRunId = run && run.sent === runId ? run.actual : runId;
    const url = `${this.serverUrl}/threads/${encodeURIComponent(threadId)}/cancel`;
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(serverRunId ? { runId: serverRunId } : {}),
    });
    return response.ok;
  }
}

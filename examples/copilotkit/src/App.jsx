import {
  CopilotChat,
  CopilotKitProvider,
  useAgent,
  useHumanInTheLoop,
  useInterrupt,
  useRenderTool,
} from "@copilotkit/react-core/v2";
import "@copilotkit/react-ui/v2/styles.css";
import { useState } from "react";
import { z } from "zod";

import "./app.css";

const AGENT = "demo";
const THREAD_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

// The thread lives in the URL (#thread=...), so a reload opens the same durable thread and
// CopilotKit connects to it (the runtime asks the server for its history and open calls).
function threadFromUrl() {
  const found = new URLSearchParams(window.location.hash.slice(1)).get("thread");
  if (found && THREAD_ID.test(found)) return found;
  const made = `ck-${crypto.randomUUID().slice(0, 8)}`;
  window.history.replaceState(null, "", `#thread=${made}`);
  return made;
}

// The frontend tool: the model calls it, the thread waits durably, the person answers here.
function ConfirmBookingCard({ args, status, respond, result }) {
  const answer = (approved) => respond({ approved, flight: args.flight });
  return (
    <div className="approval-card" data-status={status}>
      <div className="approval-title">Confirm booking</div>
      <div className="approval-flight">Flight {args.flight ?? "…"}</div>
      {status === "executing" ? (
        <div className="approval-buttons">
          <button type="button" className="approve" onClick={() => answer(true)}>
            Approve
          </button>
          <button type="button" className="deny" onClick={() => answer(false)}>
            Deny
          </button>
        </div>
      ) : null}
      {status === "complete" ? <div className="approval-answer">Answered: {String(result)}</div> : null}
    </div>
  );
}

// An approval (AG-UI 1.0 interrupt): the backend tool cancel_booking runs only once approved.
function ApprovalCard({ interrupt, resolve, cancel }) {
  if (!interrupt) return null;
  return (
    <div className="approval-card interrupt">
      <div className="approval-title">{interrupt.message ?? "Approve?"}</div>
      <div className="approval-buttons">
        <button type="button" className="approve" onClick={() => resolve({ note: "approved in CopilotKit" })}>
          Approve
        </button>
        <button type="button" className="deny" onClick={() => cancel()}>
          Deny
        </button>
      </div>
    </div>
  );
}

// Backend tools (they run on the server): one line each, while they run and once done.
function ToolCallLine({ name, parameters, status }) {
  return (
    <div className="tool-call" data-status={status}>
      <code>
        {name}({parameters ? JSON.stringify(parameters) : ""})
      </code>{" "}
      {status === "complete" ? "done" : "running…"}
    </div>
  );
}

// Shared state: the thread's state as the server streams it (STATE_SNAPSHOT, STATE_DELTA).
function SavedFlights() {
  const { agent } = useAgent({ agentId: AGENT });
  const flights = agent.state?.savedFlights ?? [];
  return (
    <section className="saved-flights">
      <h2>Saved flights</h2>
      {flights.length === 0 ? (
        <p className="empty">none yet</p>
      ) : (
        <ul>
          {flights.map((flight) => (
            <li key={flight}>{flight}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Page({ threadId }) {
  useHumanInTheLoop({
    name: "confirm_booking",
    description: "Ask the person to confirm a booking.",
    parameters: z.object({ flight: z.string().describe("The flight to book") }),
    render: ConfirmBookingCard,
  });
  useInterrupt({ agentId: AGENT, render: ApprovalCard });
  useRenderTool({ name: "*", render: ToolCallLine }, []);
  return (
    <div className="layout">
      <aside>
        <h1>durable-agui · CopilotKit</h1>
        <p>
          Thread <code id="thread-id">{threadId}</code>
        </p>
        <SavedFlights />
        <section className="try">
          <h2>Try</h2>
          <ul>
            <li>
              <code>{'call confirm_booking {"flight":"XY123"}'}</code>
            </li>
            <li>
              <code>{'call save_flight {"flight":"XY1"}'}</code>
            </li>
            <li>
              <code>think about flights</code>
            </li>
            <li>
              <code>{'call cancel_booking {"booking":"BK-1"}'}</code>
            </li>
          </ul>
        </section>
      </aside>
      <main>
        <CopilotChat agentId={AGENT} threadId={threadId} labels={{ chatInputPlaceholder: "Message the demo agent" }} />
      </main>
    </div>
  );
}

export function App() {
  const [threadId] = useState(threadFromUrl);
  return (
    <CopilotKitProvider runtimeUrl="/api/copilotkit" enableInspector={false}>
      <Page threadId={threadId} />
    </CopilotKitProvider>
  );
}

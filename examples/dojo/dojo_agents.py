"""The AG-UI Dojo's AWS Strands feature agents, served by durable-agui.

The same agents as the Dojo's Strands example server (``integrations/aws-strands/python/
examples/server/api/*.py`` in ``ag-ui-protocol/ag-ui``): the same tool names, system prompts
and state shapes, because the Dojo's scripted model (aimock) matches its fixtures on them.
Each agent is named after the path the Dojo's CopilotKit runtime posts to
(``AWS_STRANDS_URL + "/agentic-chat/"`` ...), so ``AWS_STRANDS_URL=http://127.0.0.1:8000/agents``
reaches ``POST /agents/agentic-chat``.

What the example server does through ``ag_ui_strands``' own options is done here with
durable-agui's: a tool writes the thread's shared state with ``tool_context.agent.state``
(streamed as ``STATE_DELTA`` after the tool's result) where the example emits snapshots
from tool arguments or tool stream events, and a hook (``StateInPrompt``) shows the model the
state where the example rewrites the user's message.

The model is OpenAI's (Strands ``OpenAIModel``; the reasoning agent, as the example's, the
Responses API) at ``OPENAI_BASE_URL``, the mock when the Dojo's Playwright setup runs it
(``http://127.0.0.1:5555/v1``), with ``OPENAI_API_KEY`` and ``MODEL_ID`` as the example
server reads them.

    durable-agui dev --agents dojo_agents     # from this folder
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import Any

from durable_agui import AgentDefinition, PredictState
from pydantic import BaseModel, Field
from strands import ToolContext, tool
from strands.hooks import BeforeModelCallEvent, HookProvider, HookRegistry
from strands.models.model import Model

from a2ui_surfaces import DYNAMIC_COMPOSITION_GUIDE, RECOVERY_COMPOSITION_GUIDE, a2ui_envelope

MOCK_BASE_URL = "http://127.0.0.1:5555/v1"
"""Where the Dojo's Playwright global setup starts aimock (``AIMOCK_PORT``, default 5555)."""


def openai_model(api: str = "chat") -> Model:
    """The example server's OpenAI model: Chat Completions, or the Responses API with
    reasoning summaries (``api="responses"``), at ``OPENAI_BASE_URL``."""
    client_args = {
        "api_key": os.environ.get("OPENAI_API_KEY", "sk-mock"),
        "base_url": os.environ.get("OPENAI_BASE_URL", MOCK_BASE_URL),
    }
    model_id = os.environ.get("MODEL_ID", "gpt-5.4")
    if api == "responses":
        from strands.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(
            client_args=client_args,
            model_id=model_id,
            params={"reasoning": {"effort": "medium", "summary": "auto"}},
        )
    from strands.models.openai import OpenAIModel

    return OpenAIModel(client_args=client_args, model_id=model_id)


class StateInPrompt(HookProvider):
    """Shows the model one key of the thread's shared state, at the end of the system
    prompt of every model call (the example server puts it into the user's message, with
    ``state_context_builder``): the recipe the person edited, the plan in progress."""

    MARKER = "\n\nCurrent shared state"

    def __init__(self, key: str, instruction: str) -> None:
        self.key = key
        self.instruction = instruction

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeModelCallEvent, self.show_state)

    def show_state(self, event: BeforeModelCallEvent) -> None:
        agent = event.agent
        prompt = (agent.system_prompt or "").split(self.MARKER)[0]
        value = agent.state.get(self.key)
        if value:
            prompt += (
                f"{self.MARKER} ({self.key}):\n{json.dumps(value, indent=2)}\n{self.instruction}"
            )
        agent.system_prompt = prompt


AGENTIC_CHAT = AgentDefinition(
    name="agentic-chat",
    description="Conversational Strands agent with AG-UI streaming",
    model=openai_model(),
    system_prompt="""
    You are a helpful assistant.
    When the user greets you, always greet them back. Your greeting should always start with "Hello".
    Your greeting should also always ask (exact wording) "how can I assist you?"
    """,
)

AGENTIC_CHAT_REASONING = AgentDefinition(
    name="agentic-chat-reasoning",
    description="Conversational Strands agent with reasoning/thinking event streaming",
    model=openai_model(api="responses"),
    system_prompt="""
    You are a helpful assistant that thinks through problems step by step.
    When the user greets you, always greet them back. Your greeting should always start with "Hello".
    Your greeting should also always ask (exact wording) "how can I assist you?"
    When reasoning about a problem, break it down into clear steps before answering.
    """,
)

AGENTIC_CHAT_MULTIMODAL = AgentDefinition(
    name="agentic-chat-multimodal",
    description="Conversational Strands agent with multimodal content support",
    model=openai_model(),
    system_prompt="""
    You are a helpful assistant that can analyze images and documents.
    When the user shares an image, describe what you see in detail.
    When the user shares a document, summarize its contents.
    Always be descriptive and specific about visual content.
    """,
)


@tool
def render_chart(chart_type: str, data: str) -> dict[str, Any]:
    """
    Render a chart with backend processing capabilities.

    Args:
        chart_type: Type of chart (bar, line, pie, etc.)
        data: Chart data in JSON format

    Returns:
        Chart data for frontend rendering
    """
    return {"chart_type": chart_type, "data": data[:100], "status": "rendered"}


@tool
def get_weather(location: str) -> dict[str, Any]:
    """
    Get weather information for a location.

    Args:
        location: The location to get weather for

    Returns:
        Weather data with temperature, conditions, humidity, wind speed
    """
    conditions = ["sunny", "cloudy", "rainy", "clear", "partly cloudy"]
    return {
        "temperature": random.randint(60, 85),
        "conditions": random.choice(conditions),
        "humidity": random.randint(30, 80),
        "wind_speed": random.randint(5, 20),
        "feels_like": random.randint(58, 88),
    }


BACKEND_TOOL_RENDERING = AgentDefinition(
    name="backend-tool-rendering",
    description="AWS Strands agent with backend tool rendering support",
    model=openai_model(),
    tools=[get_weather, render_chart],
    system_prompt="You are a helpful assistant with backend tool rendering capabilities. You can get weather information and render charts.",
)


def _normalize_steps(raw_steps: Any) -> list[dict[str, str]]:
    if not isinstance(raw_steps, list):
        return []
    steps = []
    for step in raw_steps:
        if isinstance(step, dict) and "description" in step:
            steps.append(
                {
                    "description": str(step["description"]),
                    "status": str(step.get("status") or "pending"),
                }
            )
        elif isinstance(step, str) and step.strip():
            steps.append({"description": step.strip(), "status": "pending"})
    return steps


def _fallback_steps(task: str, context: str) -> list[dict[str, str]]:
    """A simple deterministic plan when the model forgets to provide steps."""
    count = 6
    for token in context.split():
        if token.isdigit():
            count = max(4, min(10, int(token)))
            break
    templates = [
        "Clarifying goals for {task}",
        "Gathering resources for {task}",
        "Preparing workspace for {task}",
        "Executing core work on {task}",
        "Reviewing results for {task}",
        "Wrapping up {task}",
        "Documenting learnings from {task}",
        "Celebrating completion of {task}",
    ]
    return [
        {
            "description": templates[i % len(templates)].format(task=task).strip().capitalize(),
            "status": "pending",
        }
        for i in range(count)
    ]


@tool(context=True)
async def plan_task_steps(
    task: str,
    tool_context: ToolContext,
    context: str = "",
    steps: list[Any] | None = None,
) -> dict[str, Any]:
    """
    Plan the concrete steps required to accomplish a task and walk each
    step from "pending" through "in_progress" to "completed" so the UI
    sees progress in real time.

    Args:
        task: Brief description of what the user wants to achieve.
        context: Optional additional instructions or constraints from the user.
        steps: Ordered list of pending steps in gerund form.

    Returns:
        The task summary and the completed steps.
    """
    working = _normalize_steps(steps) or _fallback_steps(task or "the task", context)
    state = tool_context.agent.state
    state.set("steps", [dict(step) for step in working])
    # The walk the example server streams step by step; durable-agui streams the state
    # as a STATE_DELTA after the tool's result, so the page shows the walk's end.
    for step in working:
        await asyncio.sleep(random.uniform(0.05, 0.15))
        step["status"] = "in_progress"
        state.set("steps", [dict(s) for s in working])
        await asyncio.sleep(random.uniform(0.05, 0.15))
        step["status"] = "completed"
        state.set("steps", [dict(s) for s in working])
    return {"task": task, "context": context, "steps": working}


AGENTIC_GENERATIVE_UI = AgentDefinition(
    name="agentic-generative-ui",
    description="AWS Strands agent with generative UI and state streaming",
    model=openai_model(),
    tools=[plan_task_steps],
    # The UI shows the steps while the model writes them, as the example server's mapping.
    predict_state=[PredictState(state_key="steps", tool="plan_task_steps", tool_argument="steps")],
    hooks=[
        StateInPrompt(
            "steps",
            "A plan is already in progress. NEVER call plan_task_steps again unless the user "
            "explicitly asks to restart. Discuss progress or ask clarifying questions instead.",
        )
    ],
    system_prompt="""
You are an energetic project assistant who decomposes user goals into action plans.

Planning rules:
1. When the user asks for help with a task or making a plan, call `plan_task_steps` exactly once to create the plan.
2. Do NOT call `plan_task_steps` again unless the user explicitly says to restart or discard the plan (or moves on to a new task).
3. Generate 4-6 concise steps in gerund form (e.g., “Setting up repo”, “Testing prototype”) and leave their status as "pending".
4. After the tool call, send a short confirmation (<= 2 sentences) plus one emoji describing what you planned.
5. If the user is just chatting or reviewing progress, respond conversationally and DO NOT call the tool.
6. If a plan already exists, reference the current steps and ask follow-up questions instead of creating a new plan, unless instructed otherwise.
""",
)


class Recipe(BaseModel):
    """A recipe."""

    title: str = Field(description="The title of the recipe", default="Make Your Recipe")
    skill_level: str = Field(description="The skill level required for the recipe")
    special_preferences: list[str] = Field(
        description="A list of special preferences for the recipe"
    )
    cooking_time: str = Field(description="The cooking time of the recipe")
    ingredients: list[dict[str, str]] = Field(
        description="""Entire list of ingredients for the recipe, including the new ingredients
        and the ones that are already in the recipe: Icon (emoji like 🥕), name and amount.
        Like so: {\"icon\": \"🥕\", \"name\": \"Carrots\", \"amount\": \"250g\"}"""
    )
    instructions: list[str] = Field(
        description="""Entire list of instructions for the recipe,
        including the new instructions and the ones that are already there"""
    )
    changes: str = Field(description="A description of the changes made to the recipe", default="")


@tool(context=True)
def generate_recipe(recipe: Recipe, tool_context: ToolContext) -> str:
    """Using the existing (if any) ingredients and instructions, proceed with the recipe to finish it.
    Make sure the recipe is complete. ALWAYS provide the entire recipe, not just the changes.

    Args:
        recipe: The complete updated recipe with all fields
    """
    data = recipe.model_dump() if isinstance(recipe, BaseModel) else dict(recipe)
    tool_context.agent.state.set("recipe", data)
    return "Recipe updated successfully"


SHARED_STATE = AgentDefinition(
    name="shared-state",
    description="A recipe assistant that collaborates with you to create amazing recipes",
    model=openai_model(),
    tools=[generate_recipe],
    hooks=[StateInPrompt("recipe", "Please update the recipe by calling the registered tool.")],
    system_prompt="""You are a helpful recipe assistant. When asked to improve or modify a recipe:

1. Call the generate_recipe tool ONCE with the COMPLETE updated recipe
2. Include ALL fields: title, skill_level, special_preferences, cooking_time, ingredients, instructions, and changes
3. After calling the tool, respond to the user with a brief confirmation of what you changed (1-2 sentences)
4. Do NOT call the tool multiple times in a row
5. Keep existing elements that aren't being changed

Be creative and helpful!""",
)

HUMAN_IN_THE_LOOP = AgentDefinition(
    name="human-in-the-loop",
    description="AWS Strands agent with human-in-the-loop task planning",
    model=openai_model(),
    system_prompt="""You are a task planning assistant specialized in creating clear, actionable step-by-step plans.

**Your Primary Role:**
- Break down any user request into exactly 10 clear, actionable steps
- Generate steps that require human review and approval
- Execute only human-approved steps

**When a user requests help with a task:**
1. ALWAYS use the `generate_task_steps` tool to create a breakdown (default to 10 steps unless told otherwise)
2. Each step must be:
   - Brief (only a few words)
   - In imperative form (e.g., "Dig hole", "Open door", "Mix ingredients")
   - Clear and actionable
   - Logically ordered from start to finish
3. Set all steps to "enabled" status initially
4. After the user reviews the plan:
   - If accepted: Briefly confirm the plan (only include the approved steps) and proceed (don't repeat the steps). Do not ask for more clarifying information.
   - If rejected: Ask what they'd like to change (don't call generate_task_steps again until they provide input)
5. When the user accepts the plan, "execute" the plan by repeating the approved steps in order as if you have just done them. Then let the user know you have completed the plan.
    - example: if the user accepts the steps "Dig hole", "Open door", "Mix ingredients", you would respond with "Digging hole... Opening door... Mixing ingredients..."

**Important:**
- NEVER call `generate_task_steps` twice in a row without user input
- NEVER repeat the list of steps in your response after calling the tool
- DO provide a brief, creative summary of how you would execute the approved steps
""",
)


@tool
def search_flights(flights: list[dict[str, Any]]) -> str:
    """Search for flights and display the results as rich cards.

    Args:
        flights: A list of flight objects. Each flight must have:
            id, airline (e.g. "United Airlines"),
            airlineLogo (Google favicon API:
            "https://www.google.com/s2/favicons?domain={airline_domain}&sz=128"
            e.g. "https://www.google.com/s2/favicons?domain=united.com&sz=128"),
            flightNumber, origin, destination,
            date (short readable format like "Tue, Mar 18" — use near-future dates),
            departureTime, arrivalTime,
            duration (e.g. "4h 25m"), status (e.g. "On Time" or "Delayed"),
            and price (e.g. "$289").
    """
    return a2ui_envelope("flights", {"flights": flights})


@tool
def search_hotels(hotels: list[dict[str, Any]]) -> str:
    """Search for hotels and display the results as rich cards with star ratings.

    Args:
        hotels: A list of hotel objects. Each hotel must have:
            id, name (e.g. "The Plaza"),
            location (e.g. "Midtown Manhattan, NYC"),
            rating (float 0-5, e.g. 4.5),
            and price (per night, e.g. "$350").

            Generate 3-4 realistic hotel results.
    """
    return a2ui_envelope("hotels", {"hotels": hotels})


A2UI_FIXED_SCHEMA = AgentDefinition(
    name="a2ui-fixed-schema",
    description="A2UI surfaces from fixed, pre-authored schemas (direct backend tools)",
    model=openai_model(),
    tools=[search_flights, search_hotels],
    system_prompt="""You are a helpful travel assistant that can search for flights and hotels.

When the user asks about flights, use the search_flights tool.
When the user asks about hotels, use the search_hotels tool.
IMPORTANT: After calling a tool, do NOT repeat or summarize the data in your text response. The tool renders a rich UI automatically. Just say something brief like "Here are your results" or ask if they'd like to book.

For flights, each needs: id, airline, airlineLogo (Google favicon API), flightNumber, origin, destination,
date, departureTime, arrivalTime, duration, status, and price.

For hotels, each needs: id, name, location, rating (float 0-5), and price (per night).

Generate 3-5 realistic results.""",
)

DYNAMIC_CATALOG_ID = "https://a2ui.org/demos/dojo/dynamic_catalog.json"
"""The Dojo's dynamic catalog (HotelCard, ProductCard, TeamMemberCard, Row)."""

A2UI_SYSTEM_PROMPT = """You are a helpful assistant that creates rich visual UI on the fly.

When the user asks for visual content (product comparisons, dashboards, team
rosters, lists, cards, etc.), use the generate_a2ui tool to create a dynamic
A2UI surface.
IMPORTANT: After calling the tool, do NOT repeat the data in your text response.
The tool renders UI automatically. Just confirm what was rendered."""

A2UI_RECOVERY_SYSTEM_PROMPT = """You are a helpful assistant that creates rich visual UI on the fly.

When the user asks for visual content (hotel/product comparisons, team rosters,
lists, cards, etc.), use the generate_a2ui tool to create a dynamic A2UI surface.
IMPORTANT: After calling the tool, do NOT repeat the data in your text response.
The tool renders UI automatically. Just confirm what was rendered."""


def generate_a2ui_tool(composition_guide: str) -> Any:
    """``ag_ui_strands``' ``generate_a2ui`` (a sub-agent that calls ``render_a2ui``,
    validates the surface and retries), wired as a backend tool: the example server has
    the adapter inject it when the runtime asks (``injectA2UITool``); durable-agui has no
    such injection, so the agent declares it, as ``get_a2ui_tools`` is documented for."""
    from ag_ui_strands.a2ui_tool import get_a2ui_tools

    return get_a2ui_tools(
        {
            "model": openai_model(),
            "default_catalog_id": DYNAMIC_CATALOG_ID,
            "guidelines": {"composition_guide": composition_guide},
        }
    )


A2UI_DYNAMIC_SCHEMA = AgentDefinition(
    name="a2ui-dynamic-schema",
    description="Dynamic A2UI surfaces generated on the fly (auto-injected tool)",
    model=openai_model(),
    tools=[generate_a2ui_tool(DYNAMIC_COMPOSITION_GUIDE)],
    system_prompt=A2UI_SYSTEM_PROMPT,
)

A2UI_RECOVERY = AgentDefinition(
    name="a2ui-recovery",
    description="Dynamic A2UI with automatic error recovery (auto-injected tool)",
    model=openai_model(),
    tools=[generate_a2ui_tool(RECOVERY_COMPOSITION_GUIDE)],
    system_prompt=A2UI_RECOVERY_SYSTEM_PROMPT,
)

AGENTS = [
    AGENTIC_CHAT,
    AGENTIC_CHAT_REASONING,
    AGENTIC_CHAT_MULTIMODAL,
    BACKEND_TOOL_RENDERING,
    AGENTIC_GENERATIVE_UI,
    SHARED_STATE,
    HUMAN_IN_THE_LOOP,
    A2UI_FIXED_SCHEMA,
    A2UI_DYNAMIC_SCHEMA,
    A2UI_RECOVERY,
]

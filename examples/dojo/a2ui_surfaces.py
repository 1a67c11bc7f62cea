"""The fixed A2UI layouts of the Dojo's ``a2ui_fixed_schema`` demo, and the envelope a tool
returns for them.

The layouts are those of the Strands example server
(``a2ui_fixed_schema_schemas/{flight,hotel}_schema.json`` in ``ag-ui-protocol/ag-ui``): only
the data changes per call. A tool returns the ``a2ui_operations`` envelope (createSurface,
updateComponents, updateDataModel) as a JSON string, so it reaches the client as the text
of ``TOOL_CALL_RESULT``, where the CopilotKit runtime's A2UI middleware finds and paints it.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui_a2ui_toolkit import (
    A2UI_OPERATIONS_KEY,
    create_surface,
    update_components,
    update_data_model,
)

CATALOG_ID = "https://a2ui.org/demos/dojo/fixed_catalog.json"
"""The Dojo's fixed catalog (Row, FlightCard, HotelCard, StarRating)."""


def _path(name: str) -> dict[str, str]:
    return {"path": name}


FLIGHT_FIELDS = (
    "airline",
    "airlineLogo",
    "flightNumber",
    "origin",
    "destination",
    "date",
    "departureTime",
    "arrivalTime",
    "duration",
    "status",
    "price",
)

SURFACES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "flights": (
        "flight-search-results",
        [
            {
                "id": "root",
                "component": "Row",
                "children": {"componentId": "flight-card", "path": "/flights"},
                "gap": 16,
            },
            {
                "id": "flight-card",
                "component": "FlightCard",
                **{field: _path(field) for field in FLIGHT_FIELDS},
                "action": {
                    "event": {
                        "name": "book_flight",
                        "context": {
                            field: _path(field)
                            for field in ("flightNumber", "origin", "destination", "price")
                        },
                    }
                },
            },
        ],
    ),
    "hotels": (
        "hotel-search-results",
        [
            {
                "id": "root",
                "component": "Row",
                "children": {"componentId": "hotel-card", "path": "/hotels"},
                "gap": 16,
            },
            {
                "id": "hotel-card",
                "component": "HotelCard",
                "name": _path("name"),
                "location": _path("location"),
                "rating": _path("rating"),
                "pricePerNight": _path("price"),
                "action": {
                    "event": {
                        "name": "book_hotel",
                        "context": {"hotelName": _path("name"), "price": _path("price")},
                    }
                },
            },
        ],
    ),
}
"""Surface kind -> (surface id, component layout)."""


def a2ui_envelope(kind: str, data: dict[str, Any]) -> str:
    """The A2UI operations that paint the ``kind`` surface (``"flights"``, ``"hotels"``)
    with ``data``, as a JSON string."""
    surface_id, components = SURFACES[kind]
    return json.dumps(
        {
            A2UI_OPERATIONS_KEY: [
                create_surface(surface_id, catalog_id=CATALOG_ID),
                update_components(surface_id, components),
                update_data_model(surface_id, data),
            ]
        }
    )


DYNAMIC_COMPOSITION_GUIDE = """
## Available Pre-made Components

You have 3 card components. Use Row as the root with structural children to
repeat a card per item.

### Row
Layout container. Repeat a card template via structural children:
  {"id":"root","component":"Row","children":{"componentId":"card","path":"/items"}}

### HotelCard
Props: name, location, rating (number 0-5), pricePerNight, action

### ProductCard
Props: name, price, rating (number 0-5), description (optional), action

### TeamMemberCard
Props: name, role, department (optional), email (optional), action

## RULES
- Root is ALWAYS a Row with structural children: {"componentId":"<card-id>","path":"/items"}
- ALWAYS include the referenced card component in the components array.
- Inside templates use RELATIVE paths (no leading slash): {"path":"name"}.
- Always provide data in the "data" argument as {"items":[...]}.
- Pick the card type that best matches the request; generate 3-4 realistic items.
"""
"""How the ``generate_a2ui`` sub-agent composes the Dojo's dynamic catalog."""

RECOVERY_COMPOSITION_GUIDE = """
## Available Pre-made Components

Use Row as the root with structural children to repeat a card per item.

### Row
Repeat a card template via structural children:
  {"id":"root","component":"Row","children":{"componentId":"card","path":"/items"}}

### HotelCard / ProductCard / TeamMemberCard
Card components bound to per-item data (relative paths inside the template).

## RULES
- Root is ALWAYS a Row with structural children: {"componentId":"<card-id>","path":"/items"}
- ALWAYS include the referenced card component in the components array.
- Inside templates use RELATIVE paths (no leading slash): {"path":"name"}.
- Always provide data in the "data" argument as {"items":[...]}.
- Generate 3-4 realistic items with diverse data.
"""
"""The recovery demo's shorter guide."""

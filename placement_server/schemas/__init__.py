"""JSON schemas of request bodies and query strings, one module per resource."""
from typing import Any

# A JSON schema (or a piece of one), as jsonschema and fastjsonschema take it.
Schema = dict[str, Any]

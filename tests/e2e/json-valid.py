#!/usr/bin/python3
"""json-valid.py SCHEMA-FILE [JSON-FILE]: exit 0 when the JSON document (the file,
or stdin) validates against the JSON Schema (draft 2020-12; "$ref"s are read
from the schema's directory), else print why on stderr and exit 1."""
import json
import pathlib
import sys

import jsonschema

schema_path = pathlib.Path(sys.argv[1]).resolve()
schema = json.loads(schema_path.read_text())
text = open(sys.argv[2]).read() if len(sys.argv) > 2 and sys.argv[2] != "-" else sys.stdin.read()
try:
    doc = json.loads(text)
except ValueError as e:
    sys.exit(f"json-valid: not JSON ({e}): {text[:200]!r}")
store = {}
for p in schema_path.parent.glob("*.schema.json"):
    s = json.loads(p.read_text())
    store[s["$id"]] = s
resolver = jsonschema.RefResolver.from_schema(schema, store=store)
validator = jsonschema.Draft202012Validator(
    schema, resolver=resolver, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
)
errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
for e in errors[:5]:
    where = "/".join(str(x) for x in e.absolute_path) or "(top)"
    print(f"json-valid: {schema_path.name}: {where}: {e.message}", file=sys.stderr)
sys.exit(1 if errors else 0)

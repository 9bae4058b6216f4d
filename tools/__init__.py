"""kbaseline's template side: the registry of patterns and DSLs, the catalogue, validation, op.json, scaffolding.

Imported by the hooks and local_extensions.py, never by a workspace: everything a workspace needs is frozen into
its op.json, and its own files live in ``{{cookiecutter.op_name}}/``.
"""

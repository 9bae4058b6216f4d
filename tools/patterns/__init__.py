"""The compute patterns: one folder per pattern (tools/patterns/<name>/), found by tools.registry.

A pattern's ``__init__.py`` holds everything the pattern knows (ops, Phase-1 semantics, shape grammar and cases,
baseline wording, wiki keywords and operator families, ISA targets); each ``<dsl>.toml`` beside it describes that DSL's cell as data
(summary, semantics, ISA markers, facts, pitfalls, levers: what op.json and the records say about the kernel). The
workspace side of the pattern (its reference and its kernels) lives in ``{{cookiecutter.op_name}}/patterns/<name>/``.
"""

"""The compute patterns: one folder per pattern (tools/patterns/<name>/), found by tools.registry.

A pattern's ``__init__.py`` holds everything the pattern knows (ops, Phase-1 semantics, shape grammar and cases,
baseline wording, wiki keywords, ISA targets); each ``<dsl>.py`` beside it describes that DSL's cell. The
workspace side of the pattern (its reference and its kernels) lives in ``{{cookiecutter.op_name}}/patterns/<name>/``.
"""

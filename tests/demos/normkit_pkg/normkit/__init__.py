"""A kernel demo inside a package (test data): `normkit:rms_norm` is found in normkit/ops.py."""

"""A module beside the normkit package that its ops import (test data): the workspace's demo/ gets it too."""

EPS = 1e-6

"""Placeholder: the owner fills this in."""

ROUTES = []

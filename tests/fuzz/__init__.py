"""Fuzz tests of every parser (issue 8); see ``_support`` for budgets and regression files."""

"""Dashboards as code, alert rules and the triage app."""

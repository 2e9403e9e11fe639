"""Pure data access for the triage app: store in, plain rows out, no Streamlit here.

Why separate: the pages stay thin, and every number the app shows can be tested against a
real recording without a browser.
"""

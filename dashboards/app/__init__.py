"""The triage app: from an alert to its root cause in three clicks (Streamlit, read-only).

``data/`` holds pure data-access helpers over a read-only store (testable without Streamlit);
``views/`` holds one rendering module per page; ``main.py`` is the script ``streamlit run``
executes. The app never writes to a collector's store: a bundle is analysed into a store of
its own.
"""
